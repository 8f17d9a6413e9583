// @agent-sandbox/client/browser: the browser-safe part of the client (no node: imports), for the
// web console: job 0/1 inputs encoded exactly as the CLI encodes them, and what the chain says
// about a TEE instance (its operators' endpoints, the attestation document an operator posted).
export {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  type SandboxCreateRequestInput,
} from './src/job-io.ts';
export {
  type ChainTeeTarget,
  type OnChainAttestation,
  operatorEndpoints,
  readOnChainAttestation,
} from './src/tee-chain.ts';
