// Job 0/1 inputs decode back with viem using the generated ABI's layout; outputs decode in both
// accepted forms; request validation keeps secrets and bad values off chain.
import { decodeAbiParameters, encodeAbiParameters, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { isClientError } from './errors.ts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  decodeDeleteOutput,
  encodeCreateInput,
  encodeDeleteInput,
  FIELD_ORDER,
  operatorUrlFromResult,
  sandboxCreateRequestLayout,
} from './job-io.ts';

describe('SandboxCreateRequest layout', () => {
  it("comes from the generated ABI, in contract.md's field order and types", () => {
    const layout = sandboxCreateRequestLayout();
    expect(layout.source).toBe('abi');
    expect(layout.components.map((c) => c.name)).toEqual([...FIELD_ORDER]);
    expect(layout.components.map((c) => `${c.name}:${c.type}`)).toEqual([
      'name:string',
      'image:string',
      'stack:string',
      'agent_identifier:string',
      'env_json:string',
      'metadata_json:string',
      'ssh_enabled:bool',
      'ssh_public_key:string',
      'web_terminal_enabled:bool',
      'max_lifetime_seconds:uint64',
      'idle_timeout_seconds:uint64',
      'cpu_cores:uint64',
      'memory_mb:uint64',
      'disk_gb:uint64',
      'tee_required:bool',
      'tee_type:uint8',
      'attestation_nonce:string',
      'capabilities_json:string',
    ]);
  });
});

describe('job 0 input', () => {
  it('is flat-encoded and decodes back to the same request', () => {
    const req = buildCreateRequest({
      name: 'demo',
      image: 'agent-sandbox:latest',
      env_json: '{"MODE":"dev"}',
      cpu_cores: 2n,
      memory_mb: 2048,
      disk_gb: '10',
      ssh_enabled: true,
      ssh_public_key: 'ssh-ed25519 AAAA test',
      tee_required: true,
      tee_type: 1,
      capabilities_json: '["gpu"]',
    });
    const data = encodeCreateInput(req);
    const decoded = decodeAbiParameters(sandboxCreateRequestLayout().components, data);
    expect(Object.fromEntries(FIELD_ORDER.map((k, i) => [k, decoded[i]]))).toEqual(req);
    // Flat, not a single tuple: the first word is the offset of the first dynamic field
    // (18 head words), not the 0x20 a wrapped tuple starts with.
    expect(BigInt(data.slice(0, 66))).toBe(18n * 32n);
  });

  it('fills documented defaults', () => {
    expect(buildCreateRequest({})).toMatchObject({
      env_json: '{}',
      web_terminal_enabled: true,
      max_lifetime_seconds: 3600n,
      idle_timeout_seconds: 900n,
      cpu_cores: 0n,
      tee_type: 0,
    });
  });

  it.each([
    [{ env_json: '{"OPENAI_API_KEY":"sk-x"}' }, /looks like a secret.*secrets set/],
    [{ env_json: '{"GITHUB_TOKEN":"x"}' }, /looks like a secret/],
    [{ env_json: '{"N":1}' }, /must be a string/],
    [{ env_json: '[1]' }, /env_json must be JSON \(an object\)/],
    [{ metadata_json: 'nope' }, /metadata_json must be JSON/],
    [{ tee_required: true }, /tee_required needs a tee_type/],
    [{ tee_type: 4 }, /tee_type/],
    [{ cpu_cores: 2n ** 64n }, /uint64/],
    [{ cpu_cores: -1 }, /cpu_cores/],
    [{ ssh_enabled: true }, /ssh_public_key/],
    [{ nope: 1 } as never, /nope|unrecognized/i],
  ])('refuses bad input #%# with a clear USAGE error', (input, message) => {
    let err: unknown;
    try {
      buildCreateRequest(input);
    } catch (e) {
      err = e;
    }
    expect(isClientError(err, 'USAGE')).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it('never puts a refused value into the error message', () => {
    try {
      buildCreateRequest({ env_json: '{"DB_PASSWORD":"hunter2"}' });
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
  });
});

describe('job 1 input', () => {
  it('is flat (string) and decodes back', () => {
    const data = encodeDeleteInput('sb-123');
    expect(decodeAbiParameters([{ type: 'string' }], data)).toEqual(['sb-123']);
  });

  it('refuses empty and over-long ids', () => {
    expect(() => encodeDeleteInput('')).toThrow(/1–255 bytes/);
    expect(() => encodeDeleteInput('x'.repeat(256))).toThrow(/1–255 bytes/);
  });
});

describe('outputs', () => {
  const tuple = (id: string, json: string): Hex =>
    encodeAbiParameters(
      [
        {
          type: 'tuple',
          components: [
            { name: 'a', type: 'string' },
            { name: 'b', type: 'string' },
          ],
        },
      ],
      [{ a: id, b: json }],
    );

  it('decodes the create output as a single tuple', () => {
    const out = decodeCreateOutput(
      tuple('sb-1', '{"sandboxId":"sb-1","operatorApiUrl":"http://127.0.0.1:9090"}'),
    );
    expect(out.sandboxId).toBe('sb-1');
    expect(operatorUrlFromResult(out.json)).toBe('http://127.0.0.1:9090');
  });

  it('also accepts the flat pair, and never confuses the two forms', () => {
    const flat = encodeAbiParameters([{ type: 'string' }, { type: 'string' }], ['sb-2', '{"x":1}']);
    expect(decodeCreateOutput(flat)).toEqual({ sandboxId: 'sb-2', json: { x: 1 } });
  });

  it('reads a failure result: empty id, error and phase', () => {
    const out = decodeCreateOutput(tuple('', '{"error":"image not found","phase":"image_pull"}'));
    expect(out).toEqual({ sandboxId: '', json: { error: 'image not found', phase: 'image_pull' } });
  });

  it('garbage output is a CHAIN error', () => {
    expect(() => decodeCreateOutput('0x1234')).toThrow(/cannot decode/);
    expect(() => decodeDeleteOutput('0x1234')).toThrow(/cannot decode/);
  });

  it('decodes the delete output as operators post it: one tuple (string json), no NUL bytes', () => {
    const data = encodeAbiParameters(
      [{ type: 'tuple', components: [{ name: 'json', type: 'string' }] }],
      [{ json: '{"deleted":true,"sandboxId":"sbx-1"}' }],
    );
    const out = decodeDeleteOutput(data);
    expect(out).toEqual({ deleted: true, sandboxId: 'sbx-1' });
    expect(JSON.stringify(out)).not.toContain('\\u0000');
  });

  it('decodes the delete output (flat string json)', () => {
    const data = encodeAbiParameters([{ type: 'string' }], ['{"deleted":true}']);
    expect(decodeDeleteOutput(data)).toEqual({ deleted: true });
  });
});
