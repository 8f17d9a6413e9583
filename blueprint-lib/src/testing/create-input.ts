// Job 0's input for tests: a small sandbox request (1 core, 256 MB, 1 GB, 600 s / 300 s timers),
// flat-encoded as a front end submits it; `over` changes any field.
import { encodeAbiParameters, type Hex } from 'viem';
import { SANDBOX_CREATE_INPUT } from '../jobs.ts';
import type { SandboxCreateRequest } from '../validate.ts';

export function testCreateRequest(over: Partial<SandboxCreateRequest> = {}): SandboxCreateRequest {
  return {
    name: 'test',
    image: '',
    stack: '',
    agent_identifier: '',
    env_json: '{}',
    metadata_json: '{}',
    ssh_enabled: false,
    ssh_public_key: '',
    web_terminal_enabled: false,
    max_lifetime_seconds: 600n,
    idle_timeout_seconds: 300n,
    cpu_cores: 1n,
    memory_mb: 256n,
    disk_gb: 1n,
    tee_required: false,
    tee_type: 0,
    attestation_nonce: '',
    capabilities_json: '',
    ...over,
  };
}

export function testCreateInput(over: Partial<SandboxCreateRequest> = {}): Hex {
  const r = testCreateRequest(over);
  return encodeAbiParameters(SANDBOX_CREATE_INPUT, SANDBOX_CREATE_INPUT.map((p) => r[p.name]) as never);
}
