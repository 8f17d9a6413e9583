// Attacker: an anonymous caller of the public routes, who wants to load the operator (every
// /health an uncached chain read and engine ping) or profile its tenants (per-sandbox token usage
// on /metrics, sandbox ids and error text of sequential call ids, the instance's sandbox and error
// on /health). Each test failed before its fix.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstanceHealth } from '../deps.ts';
import { RunMetrics } from '../runs/run-metrics.ts';
import { type Harness, type HarnessOptions, startHarness } from '../testing/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const start = async (o: HarnessOptions) => {
  h = await startHarness(o);
  return h;
};

describe('anonymous load on the probes', () => {
  it('500 calls to /health make at most a few chain reads and engine pings, and are rate limited', async () => {
    const calls = { chain: 0, runtime: 0 };
    const t0 = Date.now();
    const hh = await start({
      deps: {
        health: {
          runtime: () => void calls.runtime++,
          store: () => true,
          chain: () => void calls.chain++,
        },
      },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const batch = await Promise.all(Array.from({ length: 10 }, () => hh.call('GET', '/health')));
      statuses.push(...batch.map((r) => r.status));
    }
    const seconds = (Date.now() - t0) / 1000;
    // At most one read per cache period (5 s), whatever the request rate.
    expect(calls.chain).toBeLessThanOrEqual(Math.ceil(seconds / 5) + 1);
    expect(calls.runtime).toBeLessThanOrEqual(Math.ceil(seconds / 5) + 1);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(400);
  });

  it('/readyz and /metrics are rate limited too', async () => {
    const hh = await start({ config: { rateLimits: { probe: 5 } } });
    for (const path of ['/readyz', '/metrics']) {
      const seen: number[] = [];
      for (let i = 0; i < 8; i++) seen.push((await hh.call('GET', path)).status);
      expect(seen, path).toContain(429);
    }
  });
});

describe('anonymous profiling of tenants', () => {
  const usage = (registry: Registry, sandboxId: string) =>
    new RunMetrics(registry).record(sandboxId, 'codex', 'completed', {
      inputTokens: 11,
      outputTokens: 7,
    });

  it('/metrics without a metrics token shows no per-sandbox series', async () => {
    const registry = new Registry();
    const hh = await start({ deps: { metrics: registry } });
    usage(registry, 'sbx-tenant-a');
    const r = await hh.call('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/agent_sandbox_agent_runs_total/);
    expect(r.text).not.toContain('sbx-tenant-a');
    expect(r.text).not.toContain('sandbox_id=');
  });

  it('with METRICS_TOKEN set, /metrics needs it; the token shows per-sandbox series, removed with their sandbox', async () => {
    const registry = new Registry();
    const token = 'm'.repeat(32);
    const hh = await start({ deps: { metrics: registry }, config: { metricsToken: token } });
    const owner = await hh.newOwner();
    const sbx = hh.addSandbox(owner.address).id;
    usage(registry, sbx);
    expect((await hh.call('GET', '/metrics')).status).toBe(401);
    expect((await hh.call('GET', '/metrics', { token: owner.token })).status).toBe(401);
    expect((await hh.call('GET', '/metrics', { token: 'x'.repeat(32) })).status).toBe(401);
    const full = await hh.call('GET', '/metrics', { token });
    expect(full.status).toBe(200);
    expect(full.text).toContain(`sandbox_id="${sbx}"`);
    await hh.api.runs.forgetSandbox(sbx);
    const after = await hh.call('GET', '/metrics', { token });
    expect(after.text).not.toContain(sbx);
    expect(after.text).toMatch(/agent_sandbox_agent_runs_total\{harness="codex",status="completed"\} 1/);
  });

  it('/api/provisions/{callId}: anonymous callers and other wallets see the phases only; the owner sees all', async () => {
    const hh = await start({});
    const owner = await hh.newOwner();
    const other = await hh.newOwner();
    const sbx = hh.addSandbox(owner.address);
    hh.sandboxes.provisions.set('42', {
      callId: '42',
      sandboxId: sbx.id,
      serviceId: '1',
      owner: owner.address,
      phase: 'failed',
      phases: [
        { phase: 'queued', at: 1 },
        { phase: 'failed', at: 2 },
      ],
      failedPhase: 'queued',
      error: 'image registry.internal/secret-team:v2 not found',
      startedAt: 1,
      updatedAt: 2,
    });
    const minimal = {
      callId: '42',
      phase: 'failed',
      phases: [
        { phase: 'queued', at: 1 },
        { phase: 'failed', at: 2 },
      ],
      failedPhase: 'queued',
      updatedAt: 2,
    };
    expect((await hh.call('GET', '/api/provisions/42')).json).toEqual(minimal);
    expect((await hh.call('GET', '/api/provisions/42', { token: other.token })).json).toEqual(minimal);
    const mine = await hh.call('GET', '/api/provisions/42', { token: owner.token });
    expect(mine.json).toMatchObject({
      sandboxId: sbx.id,
      serviceId: '1',
      error: expect.stringMatching(/not found/),
    });
    expect(mine.json.owner).toBeUndefined();
    // A bad token is a 401, not a silent anonymous answer (the client would think it is signed in).
    expect((await hh.call('GET', '/api/provisions/42', { token: 'v4.local.nope' })).status).toBe(401);
  });

  it('/health: the instance sandbox id and last error only for the metrics token or the instance owner', async () => {
    const token = 't'.repeat(32);
    let sandboxId: string | null = null;
    const instance = (): InstanceHealth => ({
      state: 'failed',
      sandboxId,
      failures: 3,
      lastError: 'pull of registry.internal/team-x failed: 401',
      nextAttemptAt: 5,
      reportedOnChain: false,
    });
    const hh = await start({
      mode: 'instance',
      deps: { mode: 'instance', instance },
      config: { metricsToken: token },
    });
    const owner = await hh.newOwner();
    const stranger = await hh.newOwner();
    sandboxId = hh.addSandbox(owner.address).id;
    const anon = await hh.call('GET', '/health');
    expect(anon.status).toBe(503);
    expect(anon.json.instance).toEqual({
      state: 'failed',
      failures: 3,
      nextAttemptAt: 5,
      reportedOnChain: false,
    });
    expect(anon.text).not.toContain(sandboxId);
    expect(anon.text).not.toContain('registry.internal');
    expect(
      (await hh.call('GET', '/health', { token: stranger.token })).json.instance.lastError,
    ).toBeUndefined();
    for (const t of [token, owner.token]) {
      const full = await hh.call('GET', '/health', { token: t });
      expect(full.json.instance).toEqual(instance());
    }
  });
});
