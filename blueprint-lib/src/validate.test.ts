// The create request's image choice: the default, the harness image for a harness agent_identifier, the allow-list.
import { describe, expect, it } from 'vitest';
import {
  type CreatePolicy,
  runtimeCreateParams,
  type SandboxCreateRequest,
  validateCreateRequest,
} from './validate.ts';

const policy: CreatePolicy = {
  defaultImage: 'agent-sandbox:base',
  imageAllowlist: ['custom:1'],
  harnessImage: 'agent-sandbox-harnesses:h',
  shapes: {
    presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
    defaultPreset: 'default',
    ceiling: { cpuCores: 4, memoryMb: 4096, diskGb: 10 },
  },
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

describe('validateCreateRequest sizes (shapes)', () => {
  const shaped: CreatePolicy = {
    ...policy,
    shapes: {
      presets: {
        small: { cpuCores: 1, memoryMb: 512, diskGb: 5 },
        big: { cpuCores: 8, memoryMb: 4096, diskGb: 10 },
      },
      defaultPreset: 'big',
      ceiling: { cpuCores: 4, memoryMb: 4096, diskGb: 10 },
    },
  };
  const none = { cpu_cores: 0n, memory_mb: 0n, disk_gb: 0n };

  it('passes a named preset and the numbers on to the runtime, which resolves them the same way', () => {
    const v = validateCreateRequest(request({ ...none, capabilities_json: '{"shape":"small"}' }), shaped);
    expect(v).toMatchObject({ shape: 'small', cpuCores: 0, memoryMb: 0, diskGb: 0 });
    expect(validateCreateRequest(request(none), shaped).shape).toBeUndefined();
  });

  it('refuses above the ceiling naming the field and the ceiling, a preset above it, and an unknown one', () => {
    expect(() => validateCreateRequest(request({ cpu_cores: 5n }), shaped)).toThrow(
      /cpu_cores 5 > ceiling 4 cores/,
    );
    expect(() => validateCreateRequest(request({ memory_mb: 2n ** 64n - 1n }), shaped)).toThrow(
      /memory_mb \d+ > ceiling 4096 MB/,
    );
    expect(() =>
      validateCreateRequest(request({ ...none, capabilities_json: '{"shape":"big"}' }), shaped),
    ).toThrow(/cpu_cores 8 > ceiling 4 cores: the size of preset "big"/);
    // The default preset is clamped, not refused.
    expect(() => validateCreateRequest(request(none), shaped)).not.toThrow();
    expect(() => validateCreateRequest(request({ capabilities_json: '{"shape":"xl"}' }), shaped)).toThrow(
      /shape "xl" is not one of this operator's presets \(small, big\)/,
    );
  });

  it('refuses an unknown create option by name; an older client capability array carries none', () => {
    expect(() => validateCreateRequest(request({ capabilities_json: '{"shapee":"small"}' }), shaped)).toThrow(
      /capabilities_json: .*shapee/,
    );
    expect(validateCreateRequest(request({ capabilities_json: '["gpu"]' }), shaped).options).toEqual({});
  });
});

describe('validateCreateRequest plain compute (agent: false)', () => {
  it('passes agent: false on, with the default image even for a harness image operator', () => {
    const v = validateCreateRequest(request({ capabilities_json: '{"agent":false}' }), policy);
    expect(v.agent).toBe(false);
    expect(v.image).toBe(policy.defaultImage);
    expect(validateCreateRequest(request(), policy).agent).toBe(true);
  });

  it('refuses a startup script with agent: false, naming why; and says startup scripts are not supported otherwise', () => {
    expect(() =>
      validateCreateRequest(
        request({ capabilities_json: '{"agent":false,"startup_script":"apt-get install x"}' }),
        policy,
      ),
    ).toThrow(
      /capabilities_json.startup_script cannot be used with agent: false: plain compute gets no coding agent, no model credentials and no startup scripts/,
    );
    expect(() =>
      validateCreateRequest(request({ capabilities_json: '{"startup_script":"x"}' }), policy),
    ).toThrow(/not supported by this operator/);
  });

  it('refuses a coding agent or an agent program with agent: false', () => {
    expect(() =>
      validateCreateRequest(
        request({ agent_identifier: 'claude', capabilities_json: '{"agent":false}' }),
        policy,
      ),
    ).toThrow(/agent_identifier "claude" names a coding agent/);
    expect(() =>
      validateCreateRequest(
        request({ env_json: '{"SANDBOX_AGENT_COMMAND":"echo"}', capabilities_json: '{"agent":false}' }),
        policy,
      ),
    ).toThrow(/env_json names SANDBOX_AGENT_COMMAND/);
  });
});

describe('validateCreateRequest network policy', () => {
  it('validates the policy and hands it to the runtime in its own (camelCase) form', () => {
    const strict =
      '{"network":{"mode":"strict","allow_domains":["Example.com."],"include_implicit_domains":true}}';
    const v = validateCreateRequest(request({ capabilities_json: strict }), policy);
    expect(v.network).toEqual({
      mode: 'strict',
      allowDomains: ['example.com'],
      includeImplicitDomains: true,
    });
    expect(runtimeCreateParams(v).network).toEqual(v.network);
    expect(runtimeCreateParams(validateCreateRequest(request({}), policy))).not.toHaveProperty('network');
    for (const bad of [
      '{"network":{"mode":"strict","allow_domains":["169.254.169.254"]}}',
      '{"network":{"mode":"all"}}',
    ]) {
      expect(() => validateCreateRequest(request({ capabilities_json: bad }), policy), bad).toThrow(
        expect.objectContaining({ code: 'INVALID_REQUEST' }),
      );
    }
  });
});

describe('validateCreateRequest forks (from_sandbox / from_snapshot)', () => {
  const sbx = `sbx-${'ab'.repeat(16)}`;
  const snap = `sha256:${'cd'.repeat(32)}`;
  const caps = (o: object) => request({ capabilities_json: JSON.stringify(o) });

  it('passes the source on to the runtime, without an image (a copy runs its source’s)', () => {
    const a = runtimeCreateParams(validateCreateRequest(caps({ from_sandbox: sbx }), policy));
    expect(a).toMatchObject({ fromSandbox: sbx });
    expect(a.image).toBeUndefined();
    const b = runtimeCreateParams(validateCreateRequest(caps({ from_snapshot: snap }), policy));
    expect(b).toMatchObject({ fromSnapshot: snap });
    expect(runtimeCreateParams(validateCreateRequest(request(), policy))).not.toHaveProperty('fromSandbox');
  });

  it('refuses an id that is not the runtime’s own form before anything sees it, both sources, an image or a TEE', () => {
    for (const [o, field] of [
      [{ from_sandbox: '../../etc/passwd' }, 'capabilities_json.from_sandbox'],
      [{ from_sandbox: `${sbx}\n` }, 'capabilities_json.from_sandbox'],
      [{ from_snapshot: 'agent-sandbox-snapshot:sbx-1' }, 'capabilities_json.from_snapshot'],
      [{ from_snapshot: snap.toUpperCase() }, 'capabilities_json.from_snapshot'],
      [{ from_sandbox: sbx, from_snapshot: snap }, 'capabilities_json.from_snapshot'],
    ] as const) {
      expect(() => validateCreateRequest(caps(o), policy), JSON.stringify(o)).toThrow(
        expect.objectContaining({ code: 'INVALID_REQUEST', details: { field } }),
      );
    }
    const withImage = { ...caps({ from_sandbox: sbx }), image: 'custom:1' };
    expect(() => validateCreateRequest(withImage, policy)).toThrow(/runs its source's image/);
    const tee = { ...caps({ from_snapshot: snap }), tee_required: true };
    expect(() => validateCreateRequest(tee, { ...policy, teeAvailable: true })).toThrow(/outside a TEE/);
  });
});
