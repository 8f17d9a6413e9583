// Test-only (e2e; never product code): the preamble the e2e files share. For cloud mode all of it —
// a fresh cloud service of the shared devnet served by operator1 alone with the test's wallet as
// its permitted caller, an `agent-sandbox-operator run` process on a free port serving it, the
// spawned `agent-sandbox` CLI signed in as that wallet, and the teardown that leaves nothing
// (`startCloudOperator`). For the instance and TEE files, which start their operators their own way,
// the parts: a free port, the operator's dir and key file, a log's tail, an instance service's
// config and the spawned CLI as a devnet wallet.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { SANDBOX_CREATE_INPUT, type SandboxCreateRequest } from '@agent-sandbox/blueprint-lib';
import { DevnetJobs, testCreateRequest } from '@agent-sandbox/blueprint-lib/testing';
import type { DevnetInfo } from '@agent-sandbox/devnet';
import Docker from 'dockerode';
import { encodeAbiParameters, type Hex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expect } from 'vitest';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'client', 'bin', 'agent-sandbox.mjs');
/** The bundled CLI as published (`agent-sandbox`, made by `node scripts/build-bins.mjs`). */
export const BUNDLED_CLI = join(ROOT, 'client', 'dist', 'cli.mjs');

/** A port that was free a moment ago (the operator binds it next). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

/** A fresh temp dir holding `role`'s key file (`operator-ecdsa.key`, mode 600), as its machine would. */
export async function operatorDir(
  devnet: DevnetInfo,
  run: string,
  role: 'operator1' | 'operator2' = 'operator1',
): Promise<{ dir: string; keyFile: string }> {
  const dir = await mkdtemp(join(tmpdir(), `${run}-`));
  const keyFile = join(dir, 'operator-ecdsa.key');
  await writeFile(keyFile, `${devnet.accounts[role].privateKey}\n`, { mode: 0o600 });
  return { dir, keyFile };
}

/** The last `chars` characters of a log file; `missing` when there is none yet. */
export function logTail(file: string, chars: number, missing = ''): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return missing;
  }
}

/**
 * An instance or TEE-instance service's config: the tuple-encoded create request its operator
 * provisions (the small test request of blueprint-lib's testing door, `over` changing any field).
 */
export const serviceConfig = (over: Partial<SandboxCreateRequest>): Hex =>
  encodeAbiParameters([{ type: 'tuple', components: SANDBOX_CREATE_INPUT }], [testCreateRequest(over)]);

/**
 * The spawned CLI (2 min bound) as `privateKey`'s wallet: HOME is `dir`, its config dir `dir/cli`;
 * `env` adds to that.
 */
export function execCli(
  args: string[],
  o: { dir: string; privateKey: Hex; env?: Record<string, string> },
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((res) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: {
          PATH: process.env['PATH'] ?? '',
          HOME: o.dir,
          AGENT_SANDBOX_CONFIG_DIR: join(o.dir, 'cli'),
          AGENT_SANDBOX_PRIVATE_KEY: o.privateKey,
          ...o.env,
        },
        timeout: 120_000,
      },
      (e, out, err) => res({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    );
  });
}

/**
 * A fresh cloud service served by operator1 alone, `permitted` its callers (funded). One operator,
 * so the CLI's --operator names the assigned one (the devnet registered fixed API ports for both
 * operators, which a test on free ports cannot serve).
 */
export function soloCloudService(devnet: DevnetInfo, permitted: readonly Hex[]): Promise<bigint> {
  return new DevnetJobs(devnet).newService('cloud', '0x', { operators: ['operator1'], permitted });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CloudOperatorOptions {
  /** Names the temp dir and the operator (`<run>-operator1`). */
  run: string;
  /** The suite's `key=value` label: every container the operator makes carries it. */
  suiteLabel: string;
  image: string;
  /** More operator environment (SANDBOX_WARM_POOL, SANDBOX_HARNESS_IMAGE, …). */
  extra?: Record<string, string>;
  /** The wallet that owns the service's sandboxes; fresh unless given. */
  ownerKey?: Hex;
  /** The CLI program `cli()` runs: the tsx launcher (CLI) unless given, e.g. BUNDLED_CLI. */
  cliBin?: string;
}

/** One operator on one fresh cloud service, and the owner's CLI against it. */
export interface CloudOperator {
  readonly dir: string;
  readonly serviceId: bigint;
  readonly url: string;
  readonly operatorId: string;
  readonly child: ChildProcess;
  readonly ownerKey: Hex;
  readonly owner: LocalAccount;
  /** The end of the operator's log. */
  log(): string;
  /** The real CLI launcher as the owner runs it: this chain, key, operator, HOME and config dir. */
  cli(args: string[], env?: Record<string, string>): Promise<CliResult>;
  /** The environment `cli()` runs the CLI with (for a program that runs it itself, e.g. ssh). */
  readonly cliEnv: Record<string, string>;
  /** Expects exit 0, showing the CLI's and the operator's output when it is not. */
  ok(r: CliResult): CliResult;
  /** Stops the operator (TERM, then KILL of its group), removes its containers and the temp dir. */
  close(): Promise<void>;
}

export async function startCloudOperator(
  devnet: DevnetInfo,
  o: CloudOperatorOptions,
): Promise<CloudOperator> {
  const ownerKey = o.ownerKey ?? generatePrivateKey();
  const owner = privateKeyToAccount(ownerKey);
  const operatorId = `${o.run}-operator1`;
  const { dir, keyFile } = await operatorDir(devnet, o.run);
  const log = () => logTail(join(dir, 'operator.log'), 3000, '(no log)');
  const serviceId = await soloCloudService(devnet, [owner.address]);
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.cloud,
      serviceId,
      dataDir: join(dir, 'operator1'),
      keyFile,
      port: await freePort(),
      operatorId,
      image: o.image,
      labels: `agent-sandbox.test=1,${o.suiteLabel}`,
      ...(o.extra ? { extra: o.extra } : {}),
    },
    randomBytes(32).toString('hex'),
  );
  const child = spawnOperator({ env, detached: true, stderr: openSync(join(dir, 'operator.log'), 'a') });

  let url = '';
  const cliEnv: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    HOME: dir,
    AGENT_SANDBOX_CONFIG_DIR: join(dir, 'cli-config'),
    AGENT_SANDBOX_RPC: devnet.rpcUrl,
    AGENT_SANDBOX_TANGLE: devnet.contracts.tangle,
    AGENT_SANDBOX_SERVICE: `${serviceId}`,
    AGENT_SANDBOX_PRIVATE_KEY: ownerKey,
  };
  const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> => {
    const c = spawn(process.execPath, [o.cliBin ?? CLI, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...cliEnv, AGENT_SANDBOX_OPERATOR: url, ...extra },
    });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    c.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    return new Promise((res) => c.on('close', (code) => res({ code, stdout, stderr })));
  };

  const ok = (r: CliResult): CliResult => {
    expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}\noperator log:\n${log()}`).toBe(0);
    return r;
  };

  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }
    const docker = new Docker();
    const label = `agent-sandbox.operator=${operatorId}`;
    for (const x of await docker.listContainers({ all: true, filters: { label: [label] } }))
      await docker
        .getContainer(x.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
    await rm(dir, { recursive: true, force: true });
  };

  try {
    url = await operatorReady(child, { timeoutMs: 90_000, log });
    cliEnv['AGENT_SANDBOX_OPERATOR'] = url;
  } catch (e) {
    await close();
    throw e;
  }
  return { dir, serviceId, url, operatorId, child, ownerKey, owner, log, cli, cliEnv, ok, close };
}
