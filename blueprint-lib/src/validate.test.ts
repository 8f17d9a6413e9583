// The create request's image choice: the default, the harness image for a harness agent_identifier, the allow-list.
import { describe, expect, it } from 'vitest';
import { type CreatePolicy, type SandboxCreateRequest, validateCreateRequest } from './validate.ts';

const policy: CreatePolicy = {
  defaultImage: 'agent-sandbox:base',
  imageAllowlist: ['custom:1'],
  harnessImage: 'agent-sandbox-harnesses:h',
  maxCpuCores: 4,
  maxMemoryMb: 4096,
  maxDiskGb: 10,
  teeAvailable: false,
};

function request(over: Partial<SandboxCreateRequest> = {}): SandboxCreateRequest {
  return {
    name: 'unit',
    image: '',
    stack: 'default',
    agent_identifier: 'default',
    env_json: '',
    metadata_json: '',
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

describe('validateCreateRequest image choice', () => {
  it('serves the harness image when agent_identifier names a harness and no image is asked', () => {
    for (const h of ['codex', 'claude', 'opencode', 'gemini']) {
      expect(validateCreateRequest(request({ agent_identifier: h }), policy).image).toBe(policy.harnessImage);
    }
    expect(validateCreateRequest(request(), policy).image).toBe(policy.defaultImage);
    expect(
      validateCreateRequest(request({ agent_identifier: 'codex' }), { ...policy, harnessImage: undefined })
        .image,
    ).toBe(policy.defaultImage);
  });

  it('lets a request name the harness image or an allow-listed one, and refuses others naming the choices', () => {
    expect(validateCreateRequest(request({ image: policy.harnessImage! }), policy).image).toBe(
      policy.harnessImage,
    );
    expect(
      validateCreateRequest(request({ image: 'custom:1', agent_identifier: 'codex' }), policy).image,
    ).toBe('custom:1');
    expect(() => validateCreateRequest(request({ image: 'other:2' }), policy)).toThrow(
      /agent-sandbox-harnesses:h/,
    );
  });
});
