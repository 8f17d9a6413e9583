// Create-request resolution (defaults, caps, minimums, timer clamping) and env merging rules.
import { describe, expect, it } from 'vitest';
import { parseSandboxRuntimeConfig, sandboxRuntimeConfigFromEnv } from './config.ts';
import { containerEnv, parseUserEnv } from './env.ts';
import { resolveCreate } from './request.ts';

const cfg = parseSandboxRuntimeConfig({
  image: 'img:1',
  snapshotDir: '/tmp/x',
  maxCpuCores: 2,
  maxMemoryMb: 4096,
});
const req = { owner: '0xabc', serviceId: 1n, callId: 5 };

describe('resolveCreate', () => {
  it('zero or absent means the default; ids become strings', () => {
    const r = resolveCreate({ ...req, cpuCores: 0, memoryMb: 0 }, cfg);
    expect(r).toMatchObject({
      cpuCores: 1,
      memoryMb: 1024,
      diskGb: 10,
      serviceId: '1',
      callId: '5',
      image: 'img:1',
    });
    expect(r.timers).toEqual({
      idleTimeoutSeconds: 1800,
      maxLifetimeSeconds: 86400,
      deleteAfterStoppedSeconds: 2592000,
    });
  });
  it('refuses anything above a cap with RESOURCES_EXCEED_LIMIT naming each one', () => {
    expect(() => resolveCreate({ ...req, cpuCores: 3, memoryMb: 5000 }, cfg)).toThrow(
      /cpu_cores 3 > ceiling 2 cores, memory_mb 5000 > ceiling 4096 MB: the size is above this operator's ceiling/,
    );
  });
  it('refuses memory below the minimum and malformed requests with VALIDATION', () => {
    expect(() => resolveCreate({ ...req, memoryMb: 64 }, cfg)).toThrow(/below the 128 MB/);
    expect(() => resolveCreate({ ...req, owner: '' }, cfg)).toThrow(/invalid create request at owner/);
    expect(() => resolveCreate({ ...req, cpuCores: -1 }, cfg)).toThrow(/cpuCores/);
  });
  it('exposes the asked ports plus the operator defaults, de-duplicated; refuses bad ones with VALIDATION', () => {
    expect(resolveCreate(req, cfg).exposedPorts).toEqual([]);
    const withDefaults = parseSandboxRuntimeConfig({
      image: 'img:1',
      snapshotDir: '/tmp/x',
      defaultExposedPorts: [5173],
    });
    expect(resolveCreate({ ...req, exposedPorts: [3000, 5173, 3000] }, withDefaults).exposedPorts).toEqual([
      3000, 5173,
    ]);
    const bad =
      (exposedPorts: number[], c = cfg) =>
      () =>
        resolveCreate({ ...req, exposedPorts }, c);
    expect(bad([0])).toThrow(expect.objectContaining({ code: 'VALIDATION' }));
    expect(bad([65536])).toThrow(/exposedPorts/);
    expect(bad([3000.5])).toThrow(/exposedPorts/);
    expect(bad([8080])).toThrow(/8080 is the sidecar's/);
    expect(bad([1, 2, 3, 4, 5, 6, 7, 8, 9])).toThrow(/exposedPorts/);
    expect(bad([1, 2, 3, 4, 5, 6, 7, 8], withDefaults)).toThrow(/at most 8 ports/);
  });
  it('clamps timers to the operator maxima', () => {
    const r = resolveCreate(
      {
        ...req,
        idleTimeoutSeconds: 999_999,
        maxLifetimeSeconds: 999_999,
        deleteAfterStoppedSeconds: 10 ** 9,
      },
      cfg,
    );
    expect(r.timers).toEqual({
      idleTimeoutSeconds: 7200,
      maxLifetimeSeconds: 172800,
      deleteAfterStoppedSeconds: 7776000,
    });
  });
});

describe('sandbox env', () => {
  it("the container's env holds the platform's variables only, never a user value", () => {
    const env = containerEnv({ token: 't'.repeat(64), sidecarPort: 8080 });
    expect(env).toEqual({
      SIDECAR_PORT: '8080',
      AGENT_WORKSPACE_ROOT: '/home/agent',
      AGENT_SUBPROCESS_UID: '1000',
      AGENT_SUBPROCESS_GID: '1000',
      SIDECAR_AUTH_TOKEN: 't'.repeat(64),
    });
  });
  it('refuses platform-owned names (loader, Node, bash start-up, sidecar and agent settings), naming the key', () => {
    for (const k of [
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'NODE_OPTIONS',
      'BASH_ENV',
      'AGENT_WORKSPACE_ROOT',
      'SIDECAR_AGENT_COMMAND',
    ]) {
      expect(() => parseUserEnv({ OK: 'x', [k]: '/tmp/evil.so' }, 'env')).toThrow(
        new RegExp(`^env "${k}": .*owned by the platform; pick another name`),
      );
    }
    expect(parseUserEnv({ SANDBOX_AGENT_COMMAND: 'echo hi', PATHLIKE: 'x' }, 'env')).toEqual({
      SANDBOX_AGENT_COMMAND: 'echo hi',
      PATHLIKE: 'x',
    });
  });
  it('refuses protected and malformed names without echoing values', () => {
    expect(() => parseUserEnv({ SIDECAR_AUTH_TOKEN: 'x' }, 'secrets')).toThrow(/cannot be overridden/);
    expect(() => parseUserEnv({ '1BAD': 'x' }, 'secrets')).toThrow(/letters, digits/);
    expect(() => parseUserEnv({ K: 'x'.repeat(70_000) }, 'secrets')).toThrow(/at most 65536 bytes/);
    expect(() => parseUserEnv({}, 'secrets', { minKeys: 1 })).toThrow(/at least 1 key/);
    try {
      parseUserEnv({ 'bad-name': 'hunter2-secret' }, 'secrets');
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
  });
});

describe('egress none (no network)', () => {
  it('refuses exposed ports at create, operator default ports at config, and a socket dir too long for sun_path', () => {
    const none = parseSandboxRuntimeConfig({ image: 'img:1', snapshotDir: '/tmp/x', egress: 'none' });
    expect(resolveCreate(req, none).exposedPorts).toEqual([]);
    expect(() => resolveCreate({ ...req, exposedPorts: [3000] }, none)).toThrow(
      expect.objectContaining({
        code: 'VALIDATION',
        message: expect.stringMatching(/SANDBOX_EGRESS=none.*3000/),
      }),
    );
    expect(() =>
      parseSandboxRuntimeConfig({
        image: 'i',
        snapshotDir: '/x',
        egress: 'none',
        defaultExposedPorts: [3000],
      }),
    ).toThrow(/SANDBOX_EGRESS=none gives sandboxes no network/);
    expect(() =>
      parseSandboxRuntimeConfig({ image: 'i', snapshotDir: '/x', sidecarSocketDir: `/${'d'.repeat(60)}` }),
    ).toThrow(/sidecarSocketDir.*too long for a Unix socket/);
    expect(none.sidecarSocketDir).toBe('/run/agent-sandbox');
  });
});

describe('config from env', () => {
  it('reads SANDBOX_* numbers and booleans and rejects garbage', () => {
    const c = sandboxRuntimeConfigFromEnv(
      { SIDECAR_IMAGE: 'i:2', SANDBOX_MAX_CPU_CORES: '4', SANDBOX_SNAPSHOT_AUTO_COMMIT: 'false' },
      { snapshotDir: '/tmp/s' },
    );
    expect(c).toMatchObject({
      image: 'i:2',
      maxCpuCores: 4,
      snapshotAutoCommit: false,
      gcHotRetentionSeconds: 86400,
    });
    expect(() =>
      sandboxRuntimeConfigFromEnv(
        { SIDECAR_IMAGE: 'i', SANDBOX_MAX_CPU_CORES: 'lots' },
        { snapshotDir: '/s' },
      ),
    ).toThrow(/SANDBOX_MAX_CPU_CORES must be a number/);
  });
});
