// The operator's chain RPC refuses connections in the middle of a burst of creates and deletes (a
// TCP proxy in front of the devnet's anvil that the test closes and reopens; issue #29's outage in
// seconds, not 60 s): while it lasts /health says degraded, "chain unreachable since …"; after it
// every job has exactly one result, the creates are running and the deleted sandboxes are gone.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs, testCreateInput } from '@agent-sandbox/blueprint-lib/testing';
import { iTangleAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { encodeAbiParameters, type Hex, parseEventLogs } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  JSON_OUTPUT,
  SANDBOX_CREATE_OUTPUT,
  SANDBOX_DELETE_INPUT,
} from '../../blueprint-lib/index.ts';
import { decodeJobResult } from '../../sdk/index.ts';
import { type TcpProxy, tcpProxy } from '../../sdk/src/testing/tcp-proxy.ts';
import { freePort, operatorDir } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-rpc-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-rpc-outage';
const docker = new Docker();

let jobs: DevnetJobs;
let proxy: TcpProxy;
let operator: ChildProcess | undefined;
let url = '';
let dir = '';
const log: string[] = [];

beforeAll(async () => {
  let keyFile: string;
  ({ dir, keyFile } = await operatorDir(devnet, RUN));
  jobs = new DevnetJobs(devnet);
  const serviceId = await jobs.newService('cloud', '0x', { operators: ['operator1'] });
  proxy = await tcpProxy(Number(new URL(devnet.rpcUrl).port));
  const env = devnetOperatorEnv(
    {
      // Every chain read and write of the operator goes through the proxy.
      devnet: { ...devnet, rpcUrl: `http://127.0.0.1:${proxy.port}` },
      blueprintId: devnet.blueprints.cloud,
      serviceId,
      dataDir: join(dir, 'data'),
      keyFile,
      port: await freePort(),
      operatorId: `${RUN}-operator1`,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      extra: { LOG_LEVEL: 'info' },
    },
    randomBytes(32).toString('hex'),
  );
  operator = spawnOperator({ env, via: 'main' });
  operator.stderr?.on('data', (d: Buffer) => log.push(d.toString()));
  url = await operatorReady(operator, { timeoutMs: 90_000, log: () => log.join('').slice(-3000) });
}, 180_000);

afterAll(async () => {
  const c = operator;
  if (c && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    c.kill('SIGKILL');
  }
  await proxy?.close();
  for (const x of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
    if (x.Labels['agent-sandbox.operator'] === `${RUN}-operator1`)
      await docker
        .getContainer(x.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
  }
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** Every JobResultSubmitted of the service for `callId`, from `fromBlock`. */
async function resultsOf(callId: bigint, fromBlock: bigint): Promise<Hex[]> {
  const logs = await jobs.pub.getLogs({ address: devnet.contracts.tangle, fromBlock, toBlock: 'latest' });
  return parseEventLogs({ abi: iTangleAbi, eventName: 'JobResultSubmitted', logs, strict: false })
    .filter((e) => e.args.serviceId === jobs.serviceId && e.args.callId === callId)
    .map((e) => e.args.output as Hex);
}

async function oneResult(call: { callId: bigint; blockNumber: bigint }, timeoutMs = 180_000): Promise<Hex> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await resultsOf(call.callId, call.blockNumber);
    if (r.length > 0) {
      expect(r, `call ${call.callId}`).toHaveLength(1);
      return r[0]!;
    }
    if (Date.now() > deadline)
      throw new Error(`no result for call ${call.callId}:\n${log.join('').slice(-3000)}`);
    await new Promise((res) => setTimeout(res, 300));
  }
}

const health = async () => {
  const res = await fetch(`${url}/health`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const sandboxIdOf = (out: Hex) => decodeJobResult(SANDBOX_CREATE_OUTPUT, out).sandboxId;
const createInput = (name: string) => testCreateInput({ name });
const deleteInput = (id: string) => encodeAbiParameters(SANDBOX_DELETE_INPUT, [id]);

describe('an outage of the operator RPC in the middle of a burst of creates and deletes', () => {
  it('/health says degraded, chain unreachable, while it lasts; then every job has exactly one result', async () => {
    // Two sandboxes to delete in the burst.
    const first = [
      await jobs.submit(JOB_SANDBOX_CREATE, createInput('outage-a')),
      await jobs.submit(JOB_SANDBOX_CREATE, createInput('outage-b')),
    ];
    const [a, b] = await Promise.all(first.map((c) => oneResult(c).then(sandboxIdOf)));
    expect(a).toMatch(/^sbx-/);
    expect((await health()).body.chainFeed?.state).toBe('ok');

    // The burst: one create, then the RPC goes away, then another create and both deletes.
    const burst = [await jobs.submit(JOB_SANDBOX_CREATE, createInput('outage-c'))];
    await proxy.cut();
    const cutAt = Date.now();
    burst.push(
      await jobs.submit(JOB_SANDBOX_CREATE, createInput('outage-d')),
      await jobs.submit(JOB_SANDBOX_DELETE, deleteInput(a!)),
      await jobs.submit(JOB_SANDBOX_DELETE, deleteInput(b!)),
    );
    let degraded: { status: number; body: Record<string, any> } | undefined;
    while (!degraded) {
      const h = await health();
      if (h.body.chainFeed?.state === 'unreachable') degraded = h;
      else if (Date.now() - cutAt > 60_000)
        throw new Error(`/health never said unreachable: ${JSON.stringify(h.body)}`);
      else await new Promise((r) => setTimeout(r, 500));
    }
    expect(degraded.status).toBe(503);
    expect(degraded.body).toMatchObject({ status: 'degraded', checks: { chain: 'error' } });
    expect(degraded.body.chainFeed.message).toMatch(/^chain unreachable since \d{4}-/);
    expect(degraded.body.chainFeed.unreachableSince).toBeGreaterThanOrEqual(cutAt - 1000);
    // Seconds of outage (the shape of #29's 60 s, shorter), then the RPC is back.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await health()).body.chainFeed.state).toBe('unreachable');
    await proxy.resume();
    const resumedAt = Date.now();

    const outs = await Promise.all(burst.map((c) => oneResult(c)));
    console.log(
      `[rpc-outage] outage ${resumedAt - cutAt} ms; /health said unreachable ${degraded.body.chainFeed.unreachableSince - cutAt} ms after the cut; ` +
        `the burst's ${burst.length} results within ${Date.now() - resumedAt} ms of the restore`,
    );
    for (const out of outs.slice(0, 2)) expect(sandboxIdOf(out)).toMatch(/^sbx-/);
    for (const [i, id] of [a, b].entries()) {
      const json = JSON.parse(decodeJobResult(JSON_OUTPUT, outs[2 + i]!).json) as Record<string, unknown>;
      expect(json).toMatchObject({ sandboxId: id, deleted: true });
      expect(
        await docker.listContainers({ all: true, filters: { label: [`agent-sandbox.id=${id}`] } }),
      ).toEqual([]);
    }
    // And nothing else: exactly one result per job of the whole run.
    for (const c of [...first, ...burst]) expect(await resultsOf(c.callId, c.blockNumber)).toHaveLength(1);
    const after = await health();
    expect(after.body.chainFeed.state).toBe('ok');
  }, 600_000);
});
