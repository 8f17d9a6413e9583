// The operator API's view of sandboxes in phala mode: the local SandboxManager's, plus the CVM
// sandboxes the TEE backend deployed, so sign-in, get/list and the …/tee/* routes (attestation,
// the owner channel the operator relays blind) work on a CVM sandbox. The CVM's sidecar takes
// exec, files, terminals and agent runs from its owner only, over that channel: the plain routes
// (which would pass them through this operator in plaintext) answer 409 saying so, as do the
// operations a CVM does not have here (stop, resume, snapshot, members) and plaintext secrets.
import { type ApiSandboxes, newRecord, RuntimeError, type SandboxRecord } from '@agent-sandbox/runtime';

export interface CvmSandboxes {
  record(id: string): SandboxRecord | undefined;
  all(): SandboxRecord[];
  endpoint(id: string): { url: string; token: string };
}

export function withCvmSandboxes(base: ApiSandboxes, cvms: CvmSandboxes): ApiSandboxes {
  const refuse = (what: string) => {
    throw new RuntimeError(
      'CONFLICT',
      `${what} is not available for a sandbox running in a Phala CVM (TEE_BACKEND=phala)`,
    );
  };
  return {
    ...base,
    get: (id) => cvms.record(id) ?? base.get(id),
    list: async (f) => [
      ...(await base.list(f)),
      // A CVM sandbox has no members (team access is refused below): only its owner lists it.
      ...('owner' in f ? cvms.all().filter((r) => r.owner.toLowerCase() === f.owner.toLowerCase()) : []),
    ],
    addMember: (id, address) =>
      cvms.record(id) ? refuse('team access (members)') : base.addMember(id, address),
    removeMember: (id, address) =>
      cvms.record(id) ? refuse('team access (members)') : base.removeMember(id, address),
    stop: (id) => (cvms.record(id) ? refuse('stop') : base.stop(id)),
    resume: (id) => (cvms.record(id) ? refuse('resume') : base.resume(id)),
    snapshot: (id) => (cvms.record(id) ? refuse('snapshot') : base.snapshot(id)),
    injectSecrets: (id, env) =>
      cvms.record(id)
        ? refuse('a plaintext secret (it would pass through the operator; use secrets set --sealed)')
        : base.injectSecrets(id, env),
    wipeSecrets: (id) => (cvms.record(id) ? refuse('wiping secrets') : base.wipeSecrets(id)),
    touch: (id) => (cvms.record(id) ? undefined : base.touch(id)),
    sidecarEndpoint: (id) => {
      if (!cvms.record(id)) return base.sidecarEndpoint(id);
      throw new RuntimeError(
        'CONFLICT',
        `sandbox ${id} runs in a Phala CVM that takes exec, files, prompts and terminals only from its owner, end to end over the owner channel (POST …/tee/channel): this operator cannot run them or see them. Use the CLI with --tee (it verifies the enclave first), e.g. \`agent-sandbox exec ${id} --tee --measurement HEX … -- CMD\``,
      );
    },
    exposedPort: (id, port) => (cvms.record(id) ? null : (base.exposedPort?.(id, port) ?? null)),
  };
}

/**
 * direct: the operator program is the enclave, and everything outside it (the host, the network,
 * a relay in front of the API) sees the owner's API session. So for a TEE sandbox the plain owner
 * routes, which a replayed session could use, are refused (409, saying to use --tee): exec, files,
 * terminals, agent runs and workflows (no sidecar through the API), port previews, plaintext
 * secrets, members and snapshots (copies of the owner's files). What the session still reaches is
 * health and lifecycle (get, list, stop, resume); owner operations come only over the owner
 * channel, which this program ends itself (TeeService.channel) with the owner's signature checked.
 */
export function withDirectEnclave(base: ApiSandboxes): ApiSandboxes {
  const refuse = (what: string): never => {
    throw new RuntimeError(
      'CONFLICT',
      `${what} is not available through the operator API for a TEE sandbox: the enclave takes it from its owner only, end to end over the owner channel (use the CLI with --tee, or the console's Attestation tab)`,
    );
  };
  return {
    ...base,
    addMember: () => refuse('team access (members)'),
    removeMember: () => refuse('team access (members)'),
    snapshot: () => refuse('a snapshot'),
    injectSecrets: () => refuse('a plaintext secret (use secrets set --sealed)'),
    wipeSecrets: () => refuse('wiping secrets'),
    sidecarEndpoint: (id) =>
      refuse(
        `exec, files, prompts and terminals of sandbox ${id} (e.g. \`agent-sandbox exec ${id} --tee --measurement HEX … -- CMD\`)`,
      ),
    exposedPort: () => null,
  };
}

/** A SandboxRecord for a CVM sandbox (no container, volume or snapshot on this host). */
export function cvmRecord(f: {
  id: string;
  owner: string;
  serviceId: string;
  callId: string;
  operatorId: string;
  name: string;
  image: string;
  sidecarUrl: string;
  deploymentId: string;
  resources: { cpuCores: number; memoryMb: number; diskGb: number };
  timers: { idleTimeoutSeconds: number; maxLifetimeSeconds: number };
}): SandboxRecord {
  const now = Date.now();
  const rec = newRecord(
    {
      id: f.id,
      owner: f.owner,
      serviceId: f.serviceId,
      callId: f.callId,
      operatorId: f.operatorId,
      name: f.name,
      state: 'running',
      image: f.image,
      volumeName: '',
      exposedPorts: [],
      resources: { ...f.resources, diskEnforced: false },
      timers: f.timers,
      baseEnv: {},
      metadata: { tee_backend: 'phala', deployment_id: f.deploymentId },
    },
    now,
  );
  // The token is never used: the CVM sidecar's token lives with the TEE backend (endpoint()).
  return { ...rec, token: '0'.repeat(64), sidecarUrl: f.sidecarUrl, startedAt: now };
}
