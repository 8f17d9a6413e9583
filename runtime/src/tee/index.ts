// TEE-instance mode, runtime side: backends, the sealing-key service, backend selection.
export type {
  LocalTeeBackend,
  SandboxTeeBackend,
  TeeBackend,
  TeeDeployment,
  TeeDeployParams,
  TeeEvidence,
} from './backend.ts';
export { openTeeBackend, type TeeSettings, teeTrustAnchors } from './config.ts';
export {
  checkTsmTree,
  DEFAULT_TSM_ROOT,
  type TsmOptions,
  type TsmReport,
  tsmReport,
} from './configfs-tsm.ts';
export { DirectTeeBackend } from './direct.ts';
export { PhalaTeeBackend } from './phala/backend.ts';
export { DEFAULT_PHALA_ENDPOINT, PhalaCloudApi, type PhalaCvmSpec } from './phala/cloud-api.ts';
export { type TeeAttestationView, TeeService, type TeeServiceOptions } from './service.ts';
