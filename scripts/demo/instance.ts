// The demo's instance-mode walk, with the role tools only (what a real network has): the user
// requests an instance service (`agent-sandbox service request`), the operator lists and approves
// it (`agent-sandbox-operator requests list|approve`), the service activates, the operator's
// `run` (OPERATOR_MODE=instance) provisions its one sandbox and reports it, the user runs a command
// in it (signing in with the owner key), then terminates the service (`agent-sandbox service
// terminate`) and the operator deletes the sandbox.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  OPERATOR_BUNDLE,
  operatorReady,
  spawnOperator,
  stopOperator,
} from '@agent-sandbox/blueprint-bin/testing';
import type { DevnetInfo } from '@agent-sandbox/devnet';
import Docker from 'dockerode';
import { ROOT } from './stack.ts';
import { cli, header, must, say, shq } from './walkthrough.ts';

export interface InstanceDemoOptions {
  devnet: DevnetInfo;
  /** Where the operator's key, data and log go. */
  dir: string;
  /** The instance operator's API port. */
  port: number;
  image: string | undefined;
  label: string;
}

export interface InstanceDemoResult {
  requestId: string;
  serviceId: string;
  sandboxId: string;
  /** The command's output inside the instance sandbox. */
  execOutput: string;
  /** No container of the sandbox is left after terminate. */
  gone: boolean;
}

const METRICS_TOKEN = randomBytes(16).toString('hex');
/** The built program when there is one (the demo builds it; plain JavaScript starts faster than tsx). */
const via = () => (existsSync(OPERATOR_BUNDLE) ? ('bundle' as const) : undefined);

/** Runs `agent-sandbox-operator ARGS` as the operator would, printing the command and its output. */
async function operatorCli(args: string[], env: Record<string, string>, shownEnv: string) {
  say(`$ ${shownEnv} agent-sandbox-operator ${args.map(shq).join(' ')}`);
  const child = spawnOperator({ cwd: ROOT, args, env, via: via() });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
    process.stdout.write(d);
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number>((res) => child.once('exit', (c) => res(c ?? 1)));
  if (code !== 0)
    throw new Error(`agent-sandbox-operator ${args[0]} failed (exit ${code}): ${stderr.trim()}`);
  return stdout;
}

/** The operator's own view of its instance (sandbox id, state): /health with its metrics token. */
async function instanceHealth(url: string): Promise<{ state?: string; sandboxId?: string | null }> {
  const r = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return ((await r.json()) as { instance?: { state?: string; sandboxId?: string | null } }).instance ?? {};
}

/** Waits for `cond` on the operator's /health (the operator acts on chain events by itself). */
async function until(url: string, what: string, cond: (h: { state?: string }) => boolean, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const h = await instanceHealth(url).catch(() => ({}));
    if (cond(h)) return h;
    if (Date.now() > deadline)
      throw new Error(`the instance operator did not get to ${what} in ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

export async function instanceWalkthrough(o: InstanceDemoOptions): Promise<InstanceDemoResult> {
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(o.dir, { recursive: true });
  const d = o.devnet;
  const blueprintId = `${d.blueprints.instance}`;
  const op = d.accounts.operator1;
  const keyFile = join(o.dir, 'operator-ecdsa.key');
  writeFileSync(keyFile, `${op.privateKey}\n`, { mode: 0o600 });
  const opEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    HTTP_RPC_URL: d.rpcUrl,
    TANGLE_CONTRACT: d.contracts.tangle,
    BLUEPRINT_ID: blueprintId,
    KEYSTORE_URI: keyFile,
    TEST_MODE: 'true',
  };
  const shownOpEnv = 'HTTP_RPC_URL=… TANGLE_CONTRACT=… BLUEPRINT_ID=… KEYSTORE_URI=…';
  const user = { AGENT_SANDBOX_PRIVATE_KEY: d.accounts.user.privateKey };
  const chain = ['--rpc', d.rpcUrl, '--tangle', d.contracts.tangle];

  header('instance 1/5  the user requests an instance service (its config is the sandbox request)');
  const sent = await must(
    cli(
      [
        'service',
        'request',
        '--json',
        '--no-wait',
        '--blueprint-id',
        blueprintId,
        '--operators',
        op.address,
        '--name',
        'demo-instance',
        '--cpu',
        '1',
        '--memory',
        '256',
        ...chain,
      ],
      { env: user },
    ),
    'service request',
  );
  const requestId = (JSON.parse(sent.stdout) as { requestId: string }).requestId;

  header('instance 2/5  the operator sees the request and approves it');
  await operatorCli(['requests', 'list'], opEnv, shownOpEnv);
  await operatorCli(['requests', 'approve', requestId], opEnv, shownOpEnv);
  const waited = await must(
    cli(['service', 'wait', requestId, '--json', ...chain], { env: user }),
    'service wait',
  );
  const serviceId = (JSON.parse(waited.stdout) as { serviceId: string }).serviceId;

  header(`instance 3/5  the operator serves service ${serviceId}: one sandbox, reported on chain`);
  const logFile = join(o.dir, 'instance-operator.log');
  say(
    `$ ${shownOpEnv} SERVICE_ID=${serviceId} OPERATOR_MODE=instance agent-sandbox-operator run   # log: ${logFile}`,
  );
  const child: ChildProcess = spawnOperator({
    cwd: ROOT,
    via: via(),
    detached: true,
    stderr: openSync(logFile, 'a'),
    env: {
      ...opEnv,
      SERVICE_ID: serviceId,
      DATA_DIR: join(o.dir, 'operator'),
      OPERATOR_MODE: 'instance',
      OPERATOR_API_PORT: `${o.port}`,
      SESSION_AUTH_SECRET: randomBytes(32).toString('hex'),
      SANDBOX_EXTRA_LABELS: o.label,
      JOB_POLL_INTERVAL_MS: '300',
      INSTANCE_CHECK_INTERVAL_MS: '300',
      METRICS_TOKEN,
      ...(o.image ? { SANDBOX_IMAGE: o.image } : {}),
    },
  });
  try {
    const log = () => `last lines:\n${readFileSync(logFile, 'utf8').slice(-2000)}`;
    const url = await operatorReady(child, { name: 'the instance operator', log });
    const ready = await until(url, 'a provisioned sandbox', (h) => h.state === 'ready');
    const sandboxId = (ready as { sandboxId?: string }).sandboxId ?? '';
    say(`sandbox ${sandboxId} is ready at ${url}`);

    header('instance 4/5  the user signs in and runs a command in the instance sandbox');
    const instance = ['--instance', serviceId, '--rpc', d.rpcUrl, '--blueprint', d.contracts.instance];
    const e = await must(
      cli(['exec', ...instance, '--', 'echo "hello from $(hostname) as $(whoami)"'], { env: user }),
      'exec --instance',
    );

    header(`instance 5/5  the user terminates service ${serviceId}; the operator deletes the sandbox`);
    await must(cli(['service', 'terminate', serviceId, ...chain], { env: user }), 'service terminate');
    await until(url, 'the end of the service', (h) => h.state === 'ended');
    const left = await new Docker().listContainers({
      all: true,
      filters: { label: [`agent-sandbox.id=${sandboxId}`] },
    });
    say(`$ docker ps -a --filter label=agent-sandbox.id=${sandboxId}`);
    say(
      left.length === 0 ? '(no containers)' : left.map((x) => `${x.Id.slice(0, 12)} ${x.State}`).join('\n'),
    );
    return { requestId, serviceId, sandboxId, execOutput: e.stdout, gone: left.length === 0 };
  } finally {
    await stopOperator(child);
  }
}
