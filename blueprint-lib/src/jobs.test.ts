import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { describe, expect, it } from 'vitest';
import {
  describeJobAbi,
  findStruct,
  SANDBOX_CREATE_INPUT,
  SANDBOX_CREATE_OUTPUT,
  WORKFLOW_CREATE_INPUT,
} from './jobs.ts';

describe('job ABI lists', () => {
  it('takes what the generated ABI exposes from it', () => {
    const src = describeJobAbi();
    // decodeCreateOutput's outputs and the Workflow struct are in forge's output.
    expect(src['CreateOutput']).toBe('abi');
    expect(src['WorkflowCreateRequest']).toBe('abi');
    // The contract takes the create request as bytes: forge emits no components for it.
    expect(src['SandboxCreateRequest']).toBe(findStruct('SandboxCreateRequest') ? 'abi' : 'spec');
  });

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

  it('finds a struct nested in any item of an ABI', () => {
    expect(findStruct('Workflow', agentSandboxBlueprintAbi as never)?.length).toBeGreaterThan(8);
    expect(findStruct('NoSuchStruct')).toBeUndefined();
  });
});
