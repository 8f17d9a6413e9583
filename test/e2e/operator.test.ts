// End to end: two real operator PROCESSES (operator1 and operator2, spawned with tsx, each with its
// own DATA_DIR and port) on a fresh cloud service of the shared devnet and the real Docker engine.
// A user submits job 0; the operator the blueprint assigns provisions and posts the result; the
// user signs in, execs, and deletes with job 1. Then kill -9 of both operators loses no job.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { iTangleAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { type Address, encodeAbiParameters, type Hex, parseEventLogs } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  JSON_OUTPUT,
  SANDBOX_CREATE_INPUT,
  SANDBOX_CREATE_OUTPUT,
  SANDBOX_DELETE_INPUT,
} from '../../blueprint-lib/index.ts';
import { decodeJobResult } from '../../sdk/index.ts';
import { freePort, operatorDir } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-op-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-operator';
const docker = new Docker();

interface OperatorProc {
  role: 'operator1' | 'operator2';
  address: Address;
  dataDir: string;
  operatorId: string;
  env: Record<string, string>;
  child?: ChildProcess;
  url?: string;
  log: string[];
}

async function makeOperator(role: 'operator1' | 'operator2', serviceId: bigint): Promise<OperatorProc> {
  const { dir: dataDir, keyFile } = await operatorDir(devnet, `${RUN}-${role}`, role);
  const acct = devnet.accounts[role];
  const operatorId = `${RUN}-${role}`;
  const port = await freePort();
  return {
    role,
    address: acct.address,
    dataDir,
    operatorId,
    log: [],
    env: devnetOperatorEnv(
      {
        devnet,
        blueprintId: devnet.blueprints.cloud,
        serviceId,
        dataDir,
        keyFile,
        port,
        operatorId,
        image,
        labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
        extra: { LOG_LEVEL: 'info' },
      },
      randomBytes(32).toString('hex'),
    ),
  };
}

/** Spawns `tsx blueprint-bin/src/main.ts run` and resolves with its API URL once it is ready. */
async function start(op: OperatorProc): Promise<string> {
  const child = spawnOperator({ env: op.env, via: 'main' });
  op.child = child;
  child.stderr?.on('data', (d: Buffer) => op.log.push(d.toString()));
  op.url = await operatorReady(child, {
    name: op.role,
    timeoutMs: 90_000,
    log: () => op.log.join('').slice(-3000),
  });
  return op.url;
}

function exited(op: OperatorProc): Promise<number | null> {
  const c = op.child!;
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve(c.exitCode);
  return new Promise((res) => c.once('exit', (code) => res(code)));
}

async function waitResult(
  jobs: DevnetJobs,
  callId: bigint,
  fromBlock: bigint,
  timeoutMs = 90_000,
): Promise<{ operator: Address; output: Hex }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const logs = await jobs.pub.getLogs({ address: devnet.contracts.tangle, fromBlock, toBlock: 'latest' });
    const evs = parseEventLogs({ abi: iTangleAbi, eventName: 'JobResultSubmitted', logs, strict: false });
    const ev = evs.find((e) => e.args.serviceId === jobs.serviceId && e.args.callId === callId);
    if (ev) return { operator: ev.args.operator as Address, output: ev.args.output as Hex };
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`no result for call ${callId} in ${timeoutMs} ms`);
}

const createInput = (name: string): Hex =>
  encodeAbiParameters(SANDBOX_CREATE_INPUT, [
    name,
    '',
    'default',
    'default',
    '{"GREETING":"hello"}',
    '{}',
    false,
    '',
    true,
    600n,
    300n,
    1n,
    256n,
    1n,
    false,
    0,
    '',
    '',
  ]);

async function signIn(url: string, jobs: DevnetJobs): Promise<string> {
  const address = jobs.caller.address;
  const ch = (await (
    await fetch(`${url}/api/auth/challenge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address }),
    })
  ).json()) as { nonce: string; message: string };
  const signature = await jobs.caller.signMessage({ message: ch.message });
  const res = await fetch(`${url}/api/auth/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ nonce: ch.nonce, address, signature }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

const containersOf = async (label: string) =>
  docker.listContainers({ all: true, filters: { label: [label, SUITE_LABEL] } });

let jobs: DevnetJobs;
const ops: OperatorProc[] = [];
const byAddress = (a: Address) => ops.find((o) => o.address.toLowerCase() === a.toLowerCase())!;

beforeAll(async () => {
  jobs = new DevnetJobs(devnet);
  const serviceId = await jobs.newCloudService();
  ops.push(await makeOperator('operator1', serviceId), await makeOperator('operator2', serviceId));
  await Promise.all(ops.map(start));
}, 180_000);

afterAll(async () => {
  for (const op of ops) {
    if (op.child && op.child.exitCode === null && op.child.signalCode === null) {
      op.child.kill('SIGTERM');
      await Promise.race([exited(op), new Promise((r) => setTimeout(r, 15_000))]);
      op.child.kill('SIGKILL');
    }
  }
  for (const c of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
    if (Object.values(c.Labels).some((v) => v.startsWith(RUN)))
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
  }
  const { Volumes } = await docker.listVolumes({ filters: { label: [SUITE_LABEL] } });
  for (const v of Volumes ?? []) {
    if (Object.values(v.Labels ?? {}).some((l) => l.startsWith(RUN)))
      await docker
        .getVolume(v.Name)
        .remove()
        .catch(() => {});
  }
  for (const op of ops) await rm(op.dataDir, { recursive: true, force: true });
}, 60_000);

describe('agent-sandbox-operator end to end', () => {
  let sandboxId = '';
  let assigned: OperatorProc;

  it('job 0: the assigned operator provisions and posts the sandbox id; the other does nothing', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createInput('e2e'));
    expect(call.operator).toBeDefined();
    assigned = byAddress(call.operator!);
    const r = await waitResult(jobs, call.callId, call.blockNumber);
    expect(r.operator.toLowerCase()).toBe(assigned.address.toLowerCase());
    const out = decodeJobResult(SANDBOX_CREATE_OUTPUT, r.output);
    const json = JSON.parse(out.json) as Record<string, unknown>;
    expect(out.sandboxId, out.json).toMatch(/^sbx-/);
    expect(json).toMatchObject({ sandboxId: out.sandboxId, operatorApiUrl: assigned.url, state: 'running' });
    expect(out.json).not.toMatch(/token/i);
    sandboxId = out.sandboxId;
    expect(await containersOf(`agent-sandbox.operator=${assigned.operatorId}`)).toHaveLength(1);
    const other = ops.find((o) => o !== assigned)!;
    expect(await containersOf(`agent-sandbox.operator=${other.operatorId}`)).toHaveLength(0);
    // Provision progress is public on the assigned operator.
    const p = (await (await fetch(`${assigned.url}/api/provisions/${call.callId}`)).json()) as {
      phase: string;
    };
    expect(p.phase).toBe('ready');
  }, 120_000);

  it('the owner signs in and execs in the sandbox', async () => {
    const token = await signIn(assigned.url!, jobs);
    const res = await fetch(`${assigned.url}/api/sandboxes/${sandboxId}/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo "$GREETING from $(whoami)"' }),
    });
    const body = (await res.json()) as { exit_code: number; stdout: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.exit_code).toBe(0);
    expect(body.stdout).toContain('hello from');
    const health = (await (await fetch(`${assigned.url}/health`)).json()) as { status: string };
    expect(health.status).toBe('ok');
  });

  it('job 1: the routed operator deletes the sandbox and its container is gone', async () => {
    const call = await jobs.submit(
      JOB_SANDBOX_DELETE,
      encodeAbiParameters(SANDBOX_DELETE_INPUT, [sandboxId]),
    );
    expect(call.operator?.toLowerCase()).toBe(assigned.address.toLowerCase());
    const r = await waitResult(jobs, call.callId, call.blockNumber);
    const json = JSON.parse(decodeJobResult(JSON_OUTPUT, r.output).json) as Record<string, unknown>;
    expect(json).toMatchObject({ sandboxId, deleted: true });
    expect(await containersOf(`agent-sandbox.id=${sandboxId}`)).toHaveLength(0);
  }, 120_000);

  it('kill -9 of both operators loses no job: a create submitted while they are down is provisioned after restart', async () => {
    for (const op of ops) op.child!.kill('SIGKILL');
    await Promise.all(ops.map(exited));
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createInput('after-crash'));
    await Promise.all(ops.map(start));
    const r = await waitResult(jobs, call.callId, call.blockNumber);
    const out = decodeJobResult(SANDBOX_CREATE_OUTPUT, r.output);
    expect(out.sandboxId, out.json).toMatch(/^sbx-/);
    expect(r.operator.toLowerCase()).toBe(call.operator!.toLowerCase());
    expect(await containersOf(`agent-sandbox.id=${out.sandboxId}`)).toHaveLength(1);
  }, 180_000);

  it('kill -9 of the assigned operator as soon as the engine has its container: after restart the same create ends running, with one result', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, createInput('mid-provision'));
    const op = byAddress(call.operator!);
    const mine = `agent-sandbox.operator=${op.operatorId}`;
    const known = new Set((await containersOf(mine)).map((c) => c.Id));
    // Kill the moment a new container of this operator exists (created, maybe not yet started).
    const deadline = Date.now() + 90_000;
    for (;;) {
      if ((await containersOf(mine)).some((c) => !known.has(c.Id))) break;
      if (Date.now() > deadline) throw new Error(`no container appeared:\n${op.log.join('').slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    op.child!.kill('SIGKILL');
    await exited(op);
    await start(op);
    const r = await waitResult(jobs, call.callId, call.blockNumber);
    const out = decodeJobResult(SANDBOX_CREATE_OUTPUT, r.output);
    expect(out.sandboxId, out.json).toMatch(/^sbx-/);
    expect(r.operator.toLowerCase()).toBe(op.address.toLowerCase());
    // Exactly one result for the call, and exactly one (running) container for the sandbox.
    const logs = await jobs.pub.getLogs({ address: devnet.contracts.tangle, fromBlock: call.blockNumber });
    const results = parseEventLogs({
      abi: iTangleAbi,
      eventName: 'JobResultSubmitted',
      logs,
      strict: false,
    }).filter((e) => e.args.serviceId === jobs.serviceId && e.args.callId === call.callId);
    expect(results).toHaveLength(1);
    const cs = await containersOf(`agent-sandbox.id=${out.sandboxId}`);
    expect(cs.map((c) => c.State)).toEqual(['running']);
  }, 240_000);

  it('SIGTERM shuts an operator down cleanly (exit 0) and keeps its store', async () => {
    const op = ops[0]!;
    op.child!.kill('SIGTERM');
    const code = await Promise.race([
      exited(op),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000)),
    ]);
    expect(code).toBe(0);
    expect(op.log.join('')).toContain('operator stopped');
    expect((await stat(join(op.dataDir, 'store'))).isDirectory()).toBe(true);
  }, 40_000);
});
