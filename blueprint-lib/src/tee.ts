// TEE-instance mode, where chain meets runtime: the TEE backend from the operator's settings, a
// TeeService whose binding context names this chain, service and operator, the secrets it opens
// going to the sandbox's normal secret path, and the InstanceTee that reportProvisioned uses.
// With TEE_BACKEND=phala the instance sandbox is a CVM the backend deploys (its sidecar holds the key).
import { createHash } from 'node:crypto';
import { parseAllowList } from '@agent-sandbox/attestation';
import {
  type ApiSandboxes,
  openTeeBackend,
  type SandboxRecord,
  type SandboxTeeBackend,
  TeeService,
  type TeeSettings,
  teeTrustAnchors,
} from '@agent-sandbox/runtime';
import type { Address } from 'viem';
import { type CreateSandboxInput, type InstanceTee, teeContextFor } from './instance.ts';
import type { InstanceRuntime } from './instance-supervisor.ts';
import { cvmRecord, withCvmSandboxes, withDirectEnclave } from './tee-sandboxes.ts';

export interface TeeInstanceOptions {
  settings: TeeSettings;
  chainId: bigint;
  serviceId: bigint;
  operator: Address;
  /** The service owner: the one wallet the enclave takes orders from (part of the binding context). */
  owner: Address;
  injectSecrets(sandboxId: string, env: Record<string, string>): Promise<unknown>;
  /** direct: the sandbox's sidecar inside this CVM, where the owner channel's requests go. */
  sidecarFor(sandboxId: string): { url: string; token: string; socketPath?: string };
  log?: (fields: Record<string, unknown>, msg: string) => void;
  /** The operator's own check (a hint; clients bring their own allow-list). */
  expectedMeasurements: readonly string[];
  requirePinned: boolean;
  acceptedTcbStatuses: readonly string[];
}

export interface TeeInstance {
  service: TeeService;
  instance: InstanceTee;
  /**
   * The operator API's sandboxes: phala, `base` plus the CVM sandboxes; direct, `base` with the
   * owner routes refused (the owner channel, ended in this program, is their only way in).
   */
  apiSandboxes(base: ApiSandboxes): ApiSandboxes;
  /**
   * The instance keeper's runtime: `base`, plus (phala) the CVM it deployed, so the keeper sees the
   * CVM as the instance sandbox (no redeploy on the next check) and deletes it through the backend.
   */
  instanceRuntime(base: InstanceRuntime): InstanceRuntime;
  /** For the capabilities route: what this operator's TEE can do. */
  capabilities: { backend: string; type: string; bindsNonce: boolean; sealedSecrets: string };
}

/** Fails (saying why) when the host cannot produce evidence: the operator must not start. */
export async function openTeeInstance(o: TeeInstanceOptions): Promise<TeeInstance> {
  const backend = await openTeeBackend(o.settings);
  const anchors = await teeTrustAnchors(o.settings);
  const contextFor = teeContextFor(o.chainId, o.serviceId, o.operator, o.owner);
  /** phala: the CVM sandboxes this operator deployed (in memory, as the backend's deployments). */
  const cvms = new Map<string, SandboxRecord>();
  const service = new TeeService({
    backend,
    contextFor,
    injectSecrets: o.injectSecrets,
    sidecarFor: o.sidecarFor,
    ...(o.log ? { log: o.log } : {}),
    verify: {
      anchors,
      allowList: parseAllowList(o.expectedMeasurements.join(',')),
      requirePinned: o.requirePinned,
      acceptedTcbStatuses: o.acceptedTcbStatuses,
    },
  });
  return {
    service,
    instance: {
      chainId: o.chainId,
      teeType: backend.teeType(),
      onChainDocument: (id, nonce) => service.onChainDocument(id, nonce),
      ...(backend.keyHolder === 'sandbox'
        ? {
            deploy: async (p: CreateSandboxInput) => {
              const r = await deployCvm(backend, contextFor, o, p);
              cvms.set(r.id, r);
              return r;
            },
          }
        : {}),
    },
    apiSandboxes: (base) =>
      backend.keyHolder === 'sandbox'
        ? withCvmSandboxes(base, {
            record: (id) => cvms.get(id),
            all: () => [...cvms.values()],
            endpoint: (id) => backend.endpoint(id),
          })
        : withDirectEnclave(base),
    instanceRuntime: (base) =>
      backend.keyHolder === 'sandbox'
        ? {
            ...base,
            list: (f) => [
              ...base.list(f),
              ...[...cvms.values()].filter((r) => !f?.serviceId || r.serviceId === f.serviceId),
            ],
            delete: async (id) => {
              if (!cvms.has(id)) return base.delete(id);
              await backend.destroy(id);
              cvms.delete(id);
            },
            // A CVM is not a container of this engine: Phala Cloud keeps it running.
            restartIfEngineStopped: async (id) =>
              cvms.has(id) ? { state: 'running' } : base.restartIfEngineStopped(id),
          }
        : base,
    capabilities: {
      backend: backend.name,
      type: backend.teeType(),
      bindsNonce: backend.supportsAttestationReportData(),
      sealedSecrets: 'hpke-x25519-sha256-chacha20poly1305',
    },
  };
}

/** The instance sandbox as a CVM: its id fixed by (chain, service, operator), its context bound at boot. */
async function deployCvm(
  backend: SandboxTeeBackend,
  contextFor: (sandboxId: string) => string,
  o: Pick<TeeInstanceOptions, 'chainId' | 'serviceId' | 'operator'>,
  p: CreateSandboxInput,
): Promise<SandboxRecord> {
  const seed = `tee-instance:${o.chainId}:${o.serviceId}:${o.operator.toLowerCase()}`;
  const sandboxId = `sbx-${createHash('sha256').update(seed).digest('hex').slice(0, 32)}`;
  const resources = { cpuCores: p.cpuCores ?? 1, memoryMb: p.memoryMb ?? 2048, diskGb: p.diskGb ?? 10 };
  const d = await backend.deploy({
    sandboxId,
    ctx: contextFor(sandboxId),
    image: p.image ?? '',
    ...resources,
    env: p.env ?? {},
  });
  return cvmRecord({
    id: sandboxId,
    owner: p.owner,
    serviceId: String(p.serviceId),
    callId: String(p.callId),
    operatorId: o.operator.toLowerCase(),
    name: p.name ?? sandboxId,
    image: p.image ?? '',
    sidecarUrl: d.sidecarUrl,
    deploymentId: d.deploymentId,
    resources,
    timers: {
      idleTimeoutSeconds: p.idleTimeoutSeconds ?? 3600,
      maxLifetimeSeconds: p.maxLifetimeSeconds ?? 86_400,
    },
  });
}
