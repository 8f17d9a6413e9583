import { describe, expect, it } from 'vitest';
import { SANDBOX_CREATE_INPUT, SANDBOX_CREATE_OUTPUT, WORKFLOW_CREATE_INPUT } from './jobs.ts';

describe('job ABI lists', () => {
  it('keeps the spec field order of SandboxCreateRequest', () => {
    expect(SANDBOX_CREATE_INPUT.map((p) => p.name)).toEqual([
      'name',
      'image',
      'stack',
      'agent_identifier',
      'env_json',
      'metadata_json',
      'ssh_enabled',
      'ssh_public_key',
      'web_terminal_enabled',
      'max_lifetime_seconds',
      'idle_timeout_seconds',
      'cpu_cores',
      'memory_mb',
      'disk_gb',
      'tee_required',
      'tee_type',
      'attestation_nonce',
      'capabilities_json',
    ]);
    expect(WORKFLOW_CREATE_INPUT.map((p) => `${p.type} ${p.name}`)).toEqual([
      'string name',
      'string workflow_json',
      'string trigger_type',
      'string trigger_config',
      'string sandbox_config_json',
      'uint8 target_kind',
      'string target_sandbox_id',
      'uint64 target_service_id',
    ]);
    expect(SANDBOX_CREATE_OUTPUT.map((p) => `${p.type} ${p.name}`)).toEqual([
      'string sandboxId',
      'string json',
    ]);
  });
});
