// Instance mode end to end, through the real programs on the shared devnet and the real engine:
// a fresh instance service → `agent-sandbox-operator run` (OPERATOR_MODE=instance) provisions its
// sandbox and reports it on chain → the owner's `agent-sandbox --instance S` finds the operator
// from the chain's getOperatorEndpoints and runs exec and prompt → the operator is killed -9 and
// restarted: same sandbox, files kept → its container dies (as in an engine restart): the operator
// restarts it → the service is terminated: the sandbox is deleted and reportDeprovisioned sent.
// And: a failing provision does not stop the operator (it is ready, /health says why, retries),
// and does not block a later start; a service that ended while the operator was down is
// deprovisioned at its next start. And workflows on the instance (`workflow … --instance S`).
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import Docker from 'dockerode';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';
import { execCli, freePort, logTail, operatorDir, ROOT, serviceConfig } from './fixture.ts';
import { instanceWorkflows } from './instance-workflows.ts';

vi.setConfig({ testTimeout: 240_000 });

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-inst-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-instance';
const AGENT = readFileSync(join(ROOT, 'scripts', 'demo', 'agent.sh'), 'utf8');
const docker = new Docker();

let dir = '';
const operators: ChildProcess[] = [];
const logFile = (name: string) => join(dir, `${name}.log`);
const fullLog = (name: string) => logTail(logFile(name), Number.POSITIVE_INFINITY);
const tail = (name: string) => logTail(logFile(name), 4000);

/** An instance service whose config sets no timers (so its sandbox is exempt from expiry). */
const instanceConfig = (name: string) =>
  serviceConfig({
    name,
    env_json: JSON.stringify({ SANDBOX_AGENT_COMMAND: AGENT }),
    max_lifetime_seconds: 0n,
    idle_timeout_seconds: 0n,
  });

function operatorEnv(serviceId: bigint, name: string, port: number, extra: Record<string, string> = {}) {
  return devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.instance,
      serviceId,
      keyFile: join(dir, 'operator-ecdsa.key'),
      operatorId: `${RUN}-${name}`,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      dataDir: join(dir, name),
      port,
      extra: {
        OPERATOR_MODE: 'instance',
        INSTANCE_CHECK_INTERVAL_MS: '300',
        METRICS_TOKEN,
        ...extra,
      },
    },
    // One secret per operator name: a restart keeps its store readable.
    createHashSecret(name),
  );
}
const secrets = new Map<string, string>();
const createHashSecret = (name: string) => {
  if (!secrets.has(name)) secrets.set(name, randomBytes(32).toString('hex'));
  return secrets.get(name)!;
};

/** The operator program itself (via main: SIGKILL hits the operator, not a launcher). */
function start(env: Record<string, string>, name: string): { child: ChildProcess; ready: Promise<string> } {
  const child = spawnOperator({ env, via: 'main', detached: true, stderr: openSync(logFile(name), 'a') });
  operators.push(child);
  return { child, ready: operatorReady(child, { log: () => tail(name), name }) };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid!, signal);
  await gone;
}

/** The spawned CLI, as the owner runs it (the service owner's key, a private config dir). */
const cli = (args: string[]) => execCli(args, { dir, privateKey: devnet.accounts.serviceOwner.privateKey });
const cliInProcess = (args: string[]) =>
  runCliInProcess(args, {
    configDir: join(dir, 'cli'),
    env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey },
  });

const chainArgs = (serviceId: bigint) => [
  '--instance',
  `${serviceId}`,
  '--rpc',
  devnet.rpcUrl,
  '--blueprint',
  devnet.contracts.instance,
];

// The operator's own view of /health (the instance's sandbox id and last error need its token).
const METRICS_TOKEN = 'instance-e2e-metrics-token';
const health = async (url: string) => {
  const r = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return { status: r.status, body: (await r.json()) as { instance?: Record<string, unknown> } };
};

beforeAll(async () => {
  ({ dir } = await operatorDir(devnet, RUN, 'operator2'));
});

// A failed walk keeps the operators' logs (the cause is read from them, not guessed).
let failed = false;
afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') failed = true;
});

afterAll(async () => {
  for (const op of operators) await kill(op, 'SIGTERM').catch(() => {});
  for (const c of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
  if (!dir) return;
  if (failed) {
    const kept = `${dir}-logs`;
    await mkdir(kept, { recursive: true });
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.log')))
      await rename(join(dir, f), join(kept, f));
    process.stderr.write(`[instance e2e] failed: the operators' logs are kept in ${kept}\n`);
  }
  await rm(dir, { recursive: true, force: true });
});

describe('instance mode end to end', () => {
  it('active → provisioned and reported → owner exec/prompt via --instance → kill -9, restart: same sandbox, files kept → container dies: restarted → service terminated: deprovisioned, container gone', async () => {
    const jobs = new DevnetJobs(devnet);
    const serviceId = await jobs.newService('instance', instanceConfig('e2e-instance'));
    const port = await freePort();
    const env = operatorEnv(serviceId, 'op', port);
    const first = start(env, 'op');
    const url = await first.ready;
    const me = devnet.accounts.operator2.address;
    const read = <T>(functionName: string, args: readonly unknown[]) =>
      jobs.pub.readContract({
        address: devnet.contracts.instance,
        abi: agentSandboxBlueprintAbi,
        functionName: functionName as never,
        args: args as never,
      }) as Promise<T>;
    // Provisioned and reported before the operator says ready.
    expect(await read<boolean>('isOperatorProvisioned', [serviceId, me])).toBe(true);
    const [ops, urls] = await read<[string[], string[]]>('getOperatorEndpoints', [serviceId]);
    expect(ops.map((a) => a.toLowerCase())).toEqual([me.toLowerCase()]);
    expect(urls).toEqual([url]);
    const h = await health(url);
    expect(h.status, JSON.stringify(h.body)).toBe(200);
    expect(h.body.instance).toMatchObject({ state: 'ready', reportedOnChain: true, failures: 0 });
    const sandboxId = h.body.instance!['sandboxId'] as string;

    // The owner, through the CLI, with nothing but the service id and the chain.
    const write = await cli([
      'exec',
      ...chainArgs(serviceId),
      '--',
      'echo kept-across-restarts > notes.txt && cat notes.txt',
    ]);
    expect(write.code, `${write.err}\n${tail('op')}`).toBe(0);
    expect(write.out.trim()).toBe('kept-across-restarts');
    const prompt = await cli(['prompt', ...chainArgs(serviceId), 'what is in my workspace?']);
    expect(prompt.code, prompt.err).toBe(0);
    expect(prompt.out).toContain('notes.txt says: kept-across-restarts');
    expect(prompt.out).toContain('Final answer: your message has 5 words');
    const got = await cliInProcess(['get', '--json', ...chainArgs(serviceId)]);
    expect(got.code, got.err).toBe(0);
    expect(JSON.parse(got.out)).toMatchObject({ id: sandboxId, state: 'running' });
    // secrets and a terminal, the same way as in cloud mode.
    const secret = `s3cret-${randomBytes(4).toString('hex')}`;
    const set = await runCliInProcess(['secrets', 'set', ...chainArgs(serviceId), 'INSTANCE_TOKEN'], {
      configDir: join(dir, 'cli'),
      env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey, INSTANCE_TOKEN: secret },
    });
    expect(set.code, set.err).toBe(0);
    expect(set.out).not.toContain(secret);
    const names = await cliInProcess(['secrets', 'list', ...chainArgs(serviceId)]);
    expect(names.out.trim()).toBe('INSTANCE_TOKEN');
    const sees = await cliInProcess(['exec', ...chainArgs(serviceId), '--', 'printenv INSTANCE_TOKEN']);
    expect(sees.out.trim()).toBe(secret);
    expect(fullLog('op')).not.toContain(secret);
    const stdin = new PassThrough();
    const term = runCliInProcess(['terminal', ...chainArgs(serviceId)], {
      configDir: join(dir, 'cli'),
      env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey },
      stdin,
    });
    stdin.write('cat notes.txt; exit\r');
    const t = await term;
    expect(t.code, t.err).toBe(0);
    expect(t.out).toContain('kept-across-restarts');

    // The devnet file fills the chain and the instance contract; --account picks the owner's key.
    await writeFile(join(dir, 'devnet.json'), JSON.stringify(devnet));
    const viaDevnet = await runCliInProcess(
      [
        'get',
        '--json',
        '--instance',
        `${serviceId}`,
        '--devnet',
        join(dir, 'devnet.json'),
        '--account',
        'serviceOwner',
      ],
      { configDir: join(dir, 'cli-devnet') },
    );
    expect(viaDevnet.code, viaDevnet.err).toBe(0);
    expect(JSON.parse(viaDevnet.out)).toMatchObject({ id: sandboxId });

    // Someone else's wallet is refused.
    const stranger = await runCliInProcess(['exec', ...chainArgs(serviceId), '--', 'id'], {
      configDir: join(dir, 'cli-stranger'),
      env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.user.privateKey },
    });
    expect(stranger.code).toBe(2);

    await instanceWorkflows({
      serviceId,
      sandboxId,
      url,
      chainArgs: chainArgs(serviceId),
      configDir: (name) => join(dir, name),
      log: () => tail('op'),
    });

    // kill -9 and restart: the same sandbox, its files kept, nothing reported twice.
    await kill(first.child, 'SIGKILL');
    const second = start(env, 'op');
    expect(await second.ready).toBe(url);
    const after = await health(url);
    expect(after.body.instance).toMatchObject({ state: 'ready', sandboxId });
    const kept = await cliInProcess(['exec', ...chainArgs(serviceId), '--', 'cat notes.txt']);
    expect(kept.code, kept.err).toBe(0);
    expect(kept.out.trim()).toBe('kept-across-restarts');
    expect(fullLog('op')).not.toMatch(
      /"msg":"instance reported on chain"[\s\S]*"msg":"instance reported on chain"/,
    );

    // Its container stops outside the operator (what an engine restart does): started again.
    const [container] = await docker.listContainers({
      filters: { label: [SUITE_LABEL, `agent-sandbox.id=${sandboxId}`] },
    });
    expect(container, 'the instance container').toBeDefined();
    await docker.getContainer(container!.Id).kill();
    // The owner retries meanwhile (calls to the dead container open the sidecar breaker; the
    // restarted one must not inherit it), no faster than the API's 30 writes a minute.
    await vi.waitFor(
      async () => {
        const r = await cliInProcess(['exec', ...chainArgs(serviceId), '--', 'cat notes.txt']);
        expect(r.out.trim(), r.err).toBe('kept-across-restarts');
      },
      { timeout: 60_000, interval: 2000 },
    );
    expect(fullLog('op')).toMatch(/the container of a running sandbox is not running; restarting it/);

    // The service ends: the sandbox is deleted and the operator reports deprovisioned.
    await jobs.send(jobs.account('serviceOwner'), 'terminateService', [serviceId]);
    await vi.waitFor(
      async () => {
        expect(await read<boolean>('isOperatorProvisioned', [serviceId, me])).toBe(false);
      },
      { timeout: 60_000, interval: 300 },
    );
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`agent-sandbox.id=${sandboxId}`] },
    });
    expect(left).toEqual([]);
    expect((await health(url)).body.instance).toMatchObject({ state: 'ended', sandboxId: null });
    const none = await cliInProcess(['exec', ...chainArgs(serviceId), '--', 'id']);
    expect(none.code).toBe(3);
    expect(none.err).toMatch(/no operator has reported the instance/);
    await kill(second.child, 'SIGTERM');
  });

  it('a failing provision: the operator still starts, /health says why and it retries; a later start is not blocked; a service ended while the operator was down is deprovisioned at its next start', async () => {
    const jobs = new DevnetJobs(devnet);
    const serviceId = await jobs.newService('instance', instanceConfig('e2e-instance-retry'));
    const port = await freePort();
    // A sidecar that cannot be healthy in 100 ms: every attempt fails at health_check.
    const failing = start(
      operatorEnv(serviceId, 'retry', port, { SANDBOX_HEALTH_TIMEOUT_MS: '100' }),
      'retry',
    );
    const url = await failing.ready;
    const down = await health(url);
    expect(down.status).toBe(503);
    expect(down.body.instance).toMatchObject({ state: 'failed', reportedOnChain: false });
    expect(down.body.instance!['failures']).toBeGreaterThanOrEqual(1);
    expect(String(down.body.instance!['lastError'])).toMatch(/health/);
    // `agent-sandbox-operator status` shows it too, and exits 1.
    const status = spawnOperator({
      env: { PATH: process.env['PATH'] ?? '', HOME: dir },
      args: ['status', '--url', url],
    });
    let printed = '';
    status.stdout?.on('data', (d: Buffer) => {
      printed += d.toString();
    });
    const code = await new Promise((r) => status.once('exit', r));
    expect(code, printed).toBe(1);
    expect(JSON.parse(printed)).toMatchObject({
      health: { status: 'degraded', instance: { state: 'failed' } },
    });
    await vi.waitFor(
      async () => expect((await health(url)).body.instance!['failures']).toBeGreaterThanOrEqual(2),
      { timeout: 60_000, interval: 300 },
    );
    await kill(failing.child, 'SIGTERM');

    // Same data dir, a sane timeout: a new attempt provisions and reports.
    const ok = start(operatorEnv(serviceId, 'retry', port), 'retry');
    await ok.ready;
    const up = await health(url);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.instance).toMatchObject({ state: 'ready', reportedOnChain: true });
    const r = await cliInProcess(['exec', ...chainArgs(serviceId), '--operator', url, '--', 'echo ok']);
    expect(r.code, r.err).toBe(0);
    const sandboxId = up.body.instance!['sandboxId'] as string;
    await kill(ok.child, 'SIGTERM');

    // The service ends while the operator is down: its next start deletes and deprovisions.
    await jobs.send(jobs.account('serviceOwner'), 'terminateService', [serviceId]);
    const late = start(operatorEnv(serviceId, 'retry', port), 'retry');
    await late.ready;
    expect((await health(url)).body.instance).toMatchObject({ state: 'ended', sandboxId: null });
    const provisioned = await jobs.pub.readContract({
      address: devnet.contracts.instance,
      abi: agentSandboxBlueprintAbi,
      functionName: 'isOperatorProvisioned',
      args: [serviceId, devnet.accounts.operator2.address],
    });
    expect(provisioned).toBe(false);
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`agent-sandbox.id=${sandboxId}`] },
    });
    expect(left).toEqual([]);
    await kill(late.child, 'SIGTERM');
  });
});
