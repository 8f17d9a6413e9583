// Test-only: the engine-loss scenario of issue 29, run against any engine the caller may kill and
// start (the shared one, in the serial stage):
// N running sandboxes (a file written in each workspace) and one create waiting for a late
// sidecar; dockerd is killed (-9); the runtime says the engine is down; dockerd starts again; the
// in-flight create ends running (one outcome, started over once) and every sandbox is adopted
// back: same sandbox and container ids, its file kept, its token still working.
import { expect } from 'vitest';
import { WORKSPACE_PATH } from '../../docker/container-spec.ts';
import type { SandboxRecord } from '../record.ts';
import { sidecarExec, type TestRig } from './rig.ts';

export interface KillableEngine {
  kill(): Promise<void>;
  start(): Promise<void>;
}

export interface EngineRestartFigures {
  sandboxes: number;
  /** From the kill to the runtime saying the engine is down. */
  noticedMs: number;
  /** From the kill to dockerd answering again. */
  outageMs: number;
  /** From dockerd answering to every sandbox adopted (engine status up). */
  adoptMs: number;
  /** From dockerd answering to the in-flight create resolving. */
  inflightMs: number;
}

const owner = '0x00000000000000000000000000000000000000dd';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms = 180_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

async function inBatches<T, R>(items: T[], size: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size)
    out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

export async function engineRestartScenario(
  rig: TestRig,
  engine: KillableEngine,
  n = 10,
): Promise<EngineRestartFigures> {
  const m = rig.manager;
  const ids = Array.from({ length: n }, (_, i) => `run-${i}`);
  const before = await inBatches(ids, 4, async (callId) => {
    const r = await m.create({ owner, serviceId: '7', callId });
    const ep = m.sidecarEndpoint(r.id);
    await sidecarExec(ep, `echo ${r.id} > ${WORKSPACE_PATH}/engine-marker`);
    return { id: r.id, containerId: r.containerId, token: ep.token };
  });

  // The in-flight create: its sidecar starts late, so it sits in health_check when dockerd dies.
  let inHealthCheck!: () => void;
  const reached = new Promise<void>((r) => {
    inHealthCheck = r;
  });
  const inflight = m
    .create(
      { owner, serviceId: '7', callId: 'inflight' },
      {
        cmd: ['sh', '-c', 'sleep 6; exec node /opt/sidecar/sidecar.cjs'],
        onPhase: (phase) => {
          if (phase === 'health_check') inHealthCheck();
        },
      },
    )
    .then(
      (r) => ({ ok: true as const, r, at: performance.now() }),
      (e: unknown) => ({ ok: false as const, e, at: performance.now() }),
    );
  await reached;

  const killedAt = performance.now();
  await engine.kill();
  await until('the runtime noticed the engine is gone', () => m.engineStatus().state === 'down');
  const noticedMs = performance.now() - killedAt;
  const down = m.engineStatus();
  expect(down.message).toMatch(/Docker engine unreachable since .*adopted back when it returns/);

  await engine.start();
  const backAt = performance.now();
  const adopted = until('every sandbox adopted back', () => m.engineStatus().state === 'up').then(() =>
    performance.now(),
  );
  const outcome = await inflight;
  if (!outcome.ok) throw outcome.e;
  const adoptMs = (await adopted) - backAt;

  // The in-flight create: running, one outcome, provisioned again from the start after the loss.
  const fresh: SandboxRecord = outcome.r;
  expect(m.get(fresh.id).state).toBe('running');
  const p = await m.getProvision('inflight', '7');
  expect(p.phase).toBe('ready');
  expect(p.phases.filter((x) => x.phase === 'ready')).toHaveLength(1);
  expect(p.phases.filter((x) => x.phase === 'queued').length).toBeGreaterThanOrEqual(2);
  expect((await m.create({ owner, serviceId: '7', callId: 'inflight' })).id).toBe(fresh.id);
  expect((await sidecarExec(m.sidecarEndpoint(fresh.id), 'id -u')).stdout).toBe('1000\n');
  // Nothing of its first attempt is left: one container for the sandbox.
  const containers = await m.driver.listManaged(rig.operatorId);
  expect(containers.filter((c) => c.sandboxId === fresh.id)).toHaveLength(1);

  // Every sandbox is back as it was.
  for (const b of before) {
    const r = m.get(b.id);
    expect(r.state).toBe('running');
    expect(r.containerId).toBe(b.containerId);
    const ep = m.sidecarEndpoint(b.id);
    expect(ep.token).toBe(b.token);
    expect((await sidecarExec(ep, `cat ${WORKSPACE_PATH}/engine-marker`)).stdout).toBe(`${b.id}\n`);
  }
  return {
    sandboxes: n,
    noticedMs: Math.round(noticedMs),
    outageMs: Math.round(backAt - killedAt),
    adoptMs: Math.round(adoptMs),
    inflightMs: Math.round(outcome.at - backAt),
  };
}
