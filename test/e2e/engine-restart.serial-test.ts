// Fault test (issue 29), at the chain level: a whole operator process on the devnet, two running
// sandboxes and a create in flight when the shared Docker engine is killed (-9) and started again.
// /health says the engine is down (503) while it is; once it is back the operator adopts the two
// sandboxes (same ids, running) and finishes the create, which then has exactly one result on
// chain — the sandbox it built, not a failure — and a create after it is served as usual.
// Killing dockerd breaks every other test using the engine: this file runs only in the serial
// stage (vitest.serial.config.ts, alone, after the main run). A private dockerd was not used: one
// started with --bridge=none deleted the host's docker0, and making one safe (its own bridge,
// containerd, iptables scope) was judged not worth the risk to the shared host.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs, testCreateInput } from '@agent-sandbox/blueprint-lib/testing';
import { iTangleAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { type Hex, parseEventLogs } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { JOB_SANDBOX_CREATE, SANDBOX_CREATE_OUTPUT } from '../../blueprint-lib/index.ts';
import { engineAnswers, killEngine, startEngine } from '../../runtime/src/sandbox/testing/shared-engine.ts';
import { decodeJobResult } from '../../sdk/index.ts';
import { freePort, operatorDir } from './fixture.ts';

vi.setConfig({ testTimeout: 900_000 });

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-eng-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-engine-restart';
const log: string[] = [];
let jobs: DevnetJobs;
let operator: ChildProcess | undefined;
let url = '';
let dir = '';
/** Resolves at the first log line that matches, from now on. */
let waitLine: (re: RegExp) => Promise<void> = async () => {};

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test kills dockerd and must run as root');
  let keyFile: string;
  ({ dir, keyFile } = await operatorDir(devnet, RUN));
  jobs = new DevnetJobs(devnet);
  const serviceId = await jobs.newService('cloud', '0x', { operators: ['operator1'] });
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.cloud,
      serviceId,
      dataDir: join(dir, 'data'),
      keyFile,
      port: await freePort(),
      operatorId: `${RUN}-operator1`,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      // Long enough for dockerd to come back on a busy machine; no warm pool (a cold create).
      extra: { LOG_LEVEL: 'info', SANDBOX_ENGINE_WAIT_MS: '300000', SANDBOX_WARM_POOL: '0' },
    },
    randomBytes(32).toString('hex'),
  );
  operator = spawnOperator({ env, via: 'main' });
  const waiters: Array<{ re: RegExp; go: () => void }> = [];
  operator.stderr?.on('data', (d: Buffer) => {
    const text = d.toString();
    log.push(text);
    for (const w of [...waiters]) {
      if (!w.re.test(text)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.go();
    }
  });
  waitLine = (re) => new Promise<void>((go) => waiters.push({ re, go }));
  url = await operatorReady(operator, { timeoutMs: 90_000, log: () => log.join('').slice(-3000) });
}, 240_000);

afterAll(async () => {
  if (!(await engineAnswers())) await startEngine();
  const c = operator;
  if (c && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    c.kill('SIGKILL');
  }
  const docker = new Docker();
  for (const x of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
    if (x.Labels['agent-sandbox.operator'] === `${RUN}-operator1`)
      await docker
        .getContainer(x.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
  }
  if (dir) await rm(dir, { recursive: true, force: true });
}, 240_000);

async function resultsOf(callId: bigint, fromBlock: bigint): Promise<Hex[]> {
  const logs = await jobs.pub.getLogs({ address: devnet.contracts.tangle, fromBlock, toBlock: 'latest' });
  return parseEventLogs({ abi: iTangleAbi, eventName: 'JobResultSubmitted', logs, strict: false })
    .filter((e) => e.args.serviceId === jobs.serviceId && e.args.callId === callId)
    .map((e) => e.args.output as Hex);
}

async function oneResult(call: { callId: bigint; blockNumber: bigint }, timeoutMs = 400_000): Promise<Hex> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await resultsOf(call.callId, call.blockNumber);
    if (r.length > 0) {
      expect(r, `call ${call.callId}`).toHaveLength(1);
      return r[0]!;
    }
    if (Date.now() > deadline)
      throw new Error(`no result for call ${call.callId}:\n${log.join('').slice(-3000)}`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

const health = async () => {
  const res = await fetch(`${url}/health`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const sandboxOf = (out: Hex) => decodeJobResult(SANDBOX_CREATE_OUTPUT, out);

describe('the shared Docker engine killed and restarted under a whole operator', () => {
  it('degraded while gone; the in-flight create posts exactly one result (its sandbox); the sandboxes are adopted', async () => {
    const first = [
      await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'eng-a' })),
      await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'eng-b' })),
    ];
    const running = await Promise.all(first.map((c) => oneResult(c).then((o) => sandboxOf(o).sandboxId)));
    for (const id of running) expect(id).toMatch(/^sbx-/);
    expect((await health()).body.engine).toMatchObject({ state: 'up', losses: 0 });

    // A create in flight: the engine dies the moment its container is being started.
    const starting = waitLine(/"phase":"container_start"/);
    const inflight = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'eng-inflight' }));
    await starting;
    await killEngine();
    const killedAt = Date.now();
    let down: { status: number; body: Record<string, any> } | undefined;
    while (!down) {
      const h = await health();
      // The engine block says down at once; the runtime check's cached answer follows within its TTL.
      if (h.body.engine?.state === 'down' && h.body.checks?.runtime === 'error') down = h;
      else if (Date.now() - killedAt > 60_000)
        throw new Error(`/health never said down: ${JSON.stringify(h.body)}`);
      else await new Promise((r) => setTimeout(r, 200));
    }
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: 'degraded', checks: { runtime: 'error' } });
    expect(down.body.engine.message).toMatch(/Docker engine unreachable since/);
    // The create must not have been answered while the engine was gone.
    expect(await resultsOf(inflight.callId, inflight.blockNumber)).toEqual([]);

    await startEngine();
    const out = sandboxOf(await oneResult(inflight));
    expect(out.sandboxId, `the in-flight create's result: ${out.json}`).toMatch(/^sbx-/);
    let back = await health();
    while (back.body.engine?.state !== 'up') {
      await new Promise((r) => setTimeout(r, 500));
      back = await health();
    }
    expect(back.body.engine).toMatchObject({ state: 'up', losses: 1, adoption: { failed: 0 } });
    expect(back.body.engine.adoption.adopted).toBeGreaterThanOrEqual(2);

    // The sandboxes are there, the in-flight one among them, each with one container.
    const docker = new Docker();
    for (const id of [...running, out.sandboxId]) {
      const cs = await docker.listContainers({ filters: { label: [`agent-sandbox.id=${id}`] } });
      expect(cs, id).toHaveLength(1);
      expect(cs[0]!.State, id).toBe('running');
    }
    // An ordinary create after it is served, and every job of the run has exactly one result.
    const after = await jobs.submit(JOB_SANDBOX_CREATE, testCreateInput({ name: 'eng-after' }));
    expect(sandboxOf(await oneResult(after)).sandboxId).toMatch(/^sbx-/);
    for (const c of [...first, inflight, after])
      expect(await resultsOf(c.callId, c.blockNumber)).toHaveLength(1);
    console.info(`[engine-restart operator] killed→down ${down.body.engine.downSince - killedAt} ms`);
  });
});
