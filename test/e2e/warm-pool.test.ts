// The warm pool end to end, through the real programs: an `agent-sandbox-operator run` process with
// SANDBOX_WARM_POOL=1 on a fresh cloud service of the shared devnet, driven by the `agent-sandbox`
// CLI. The pooled container is unreachable before its claim (`get` of its id exits 3), the on-chain
// create claims it (progress shows pool_claim, same container), its bootstrap token is refused by
// the sidecar afterwards, exec sees the create's env, the pool refills, and delete leaves nothing.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { localTangleAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { parseEther, parseEventLogs } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'client', 'bin', 'agent-sandbox.mjs');
const RUN = `e2e-pool-${Date.now().toString(36)}`;
const OPERATOR_ID = `${RUN}-operator1`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-warm-pool';
const docker = new Docker();
const ownerKey = generatePrivateKey();
const owner = privateKeyToAccount(ownerKey);
let dir = '';
let operator: ChildProcess | undefined;
let operatorUrl = '';
let serviceId = 0n;

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

/** A fresh cloud service served by operator1 alone, `owner` its permitted caller. */
async function newService(jobs: DevnetJobs): Promise<bigint> {
  await jobs.pub.request({
    method: 'anvil_setBalance' as never,
    params: [owner.address, `0x${parseEther('100').toString(16)}`] as never,
  });
  const req = await jobs.send(jobs.account('serviceOwner'), 'requestService', [
    BigInt(devnet.blueprints.cloud),
    [devnet.accounts.operator1.address],
    '0x',
    [owner.address],
    0n,
    '0x0000000000000000000000000000000000000000',
    0n,
    0,
  ]);
  const [ev] = parseEventLogs({
    abi: localTangleAbi,
    eventName: 'ServiceRequested',
    logs: req.logs as never,
  });
  const done = await jobs.send(jobs.account('operator1'), 'approveService', [
    {
      requestId: ev!.args.requestId,
      securityCommitments: [],
      blsPubkey: [0n, 0n, 0n, 0n],
      blsPopSignature: [0n, 0n],
      teeCommitments: [],
    },
  ]);
  const [act] = parseEventLogs({
    abi: localTangleAbi,
    eventName: 'ServiceActivated',
    logs: done.logs as never,
  });
  return act!.args.serviceId;
}

const operatorLog = () => {
  try {
    return readFileSync(join(dir, 'operator.log'), 'utf8').slice(-3000);
  } catch {
    return '(no log)';
  }
};

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: dir,
      AGENT_SANDBOX_CONFIG_DIR: join(dir, 'cli-config'),
      AGENT_SANDBOX_RPC: devnet.rpcUrl,
      AGENT_SANDBOX_TANGLE: devnet.contracts.tangle,
      AGENT_SANDBOX_SERVICE: `${serviceId}`,
      AGENT_SANDBOX_PRIVATE_KEY: ownerKey,
      AGENT_SANDBOX_OPERATOR: operatorUrl,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr })));
}

function ok(r: CliResult): CliResult {
  expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}\noperator log:\n${operatorLog()}`).toBe(0);
  return r;
}

/** Waits (bounded) until the operator's metrics report `n` pooled containers. */
async function poolReady(n: number): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = await (await fetch(`${operatorUrl}/metrics`)).text();
    if (new RegExp(`^agent_sandbox_warm_pool_ready ${n}$`, 'm').test(text)) return;
    if (Date.now() > deadline) throw new Error(`warm pool never reached ${n}; log:\n${operatorLog()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const mine = async () =>
  (
    await docker.listContainers({ all: true, filters: { label: [`agent-sandbox.operator=${OPERATOR_ID}`] } })
  ).map((c) => ({ id: c.Id, sandboxId: c.Labels['agent-sandbox.id'] ?? '' }));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), `${RUN}-`));
  serviceId = await newService(new DevnetJobs(devnet));
  const keyFile = join(dir, 'operator-ecdsa.key');
  await writeFile(keyFile, `${devnet.accounts.operator1.privateKey}\n`, { mode: 0o600 });
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.cloud,
      serviceId,
      dataDir: join(dir, 'operator1'),
      keyFile,
      port: await freePort(),
      operatorId: OPERATOR_ID,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      // The CLI asks for 1 core, 1024 MB and 5 GB unless told; the pool holds the operator's
      // defaults (1, 1024, 10), and workspaces hold their disk size here (loop disks): match them.
      extra: { SANDBOX_WARM_POOL: '1', SANDBOX_DEFAULT_DISK_GB: '5' },
    },
    randomBytes(32).toString('hex'),
  );
  operator = spawnOperator({ env, detached: true, stderr: openSync(join(dir, 'operator.log'), 'a') });
  operatorUrl = await operatorReady(operator, { timeoutMs: 90_000, log: operatorLog });
}, 180_000);

afterAll(async () => {
  const c = operator;
  if (c && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {}
  }
  for (const x of await mine())
    await docker
      .getContainer(x.id)
      .remove({ force: true, v: true })
      .catch(() => {});
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('warm pool through the chain and the CLI', () => {
  it('the on-chain create claims the pooled container, which no one could reach before; the pool refills; shutdown removes it', async () => {
    await poolReady(1);
    const [pooled] = await mine();
    expect(pooled).toBeDefined();
    // Before its claim the pooled container is no one's: the owner's CLI cannot see it.
    ok(await cli(['login']));
    expect((await cli(['get', pooled!.sandboxId])).code).toBe(3);
    expect(ok(await cli(['list'])).stdout.trim()).toBe('');

    const r = ok(await cli(['create', '--json', '--name', 'warm', '--env', 'GREETING=from-the-pool']));
    expect(r.stderr).toContain('pool_claim');
    expect(r.stderr).not.toContain('container_create');
    const out = JSON.parse(r.stdout) as { sandbox: { id: string; state: string } };
    expect(out.sandbox).toMatchObject({ id: pooled!.sandboxId, state: 'running' });
    const id = out.sandbox.id;

    // The bootstrap token (still in the container's config) is refused by the sidecar now.
    const info = await docker.getContainer(pooled!.id).inspect();
    const boot = info.Config.Env.find((e) => e.startsWith('SIDECAR_AUTH_TOKEN='))!.split('=')[1];
    const port = info.NetworkSettings.Ports['8080/tcp']?.find((b) => b.HostIp === '127.0.0.1')?.HostPort;
    const direct = await fetch(`http://127.0.0.1:${port}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${boot}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    expect(direct.status).toBe(403);

    expect(ok(await cli(['exec', id, '--', 'echo "$GREETING as $(whoami)"'])).stdout).toBe(
      'from-the-pool as agent\n',
    );
    await poolReady(1);
    const refill = (await mine()).filter((c) => c.sandboxId !== id);
    expect(refill).toHaveLength(1);

    ok(await cli(['delete', id]));
    expect((await mine()).map((c) => c.sandboxId)).toEqual([refill[0]!.sandboxId]);
    // A clean shutdown removes the unclaimed container too.
    const c = operator!;
    const exited = new Promise((res) => c.once('exit', res));
    c.kill('SIGTERM');
    await exited;
    expect(await mine()).toEqual([]);
  }, 240_000);
});
