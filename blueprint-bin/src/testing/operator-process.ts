// Test-only: the one way tests, benches and the TEE demo start the operator program as a process —
// the environment of a devnet operator, the spawn, and the wait for its "ready" line (API URL).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The installed launcher, as a user runs it (it starts src/main.ts in a child node process). */
export const OPERATOR_BIN = fileURLToPath(new URL('../../bin/agent-sandbox-operator.mjs', import.meta.url));
/** The bundle users run (`npm run build:bins`), plain JavaScript, one process. */
export const OPERATOR_BUNDLE = fileURLToPath(new URL('../../dist/main.mjs', import.meta.url));
/** The program itself, run under tsx's loader in the spawned process (signals reach it directly). */
export const OPERATOR_MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

export interface DevnetOperatorEnv {
  /** The devnet's chain: its RPC URL and Tangle contract. */
  devnet: { rpcUrl: string; contracts: { tangle: string } };
  blueprintId: bigint | number;
  serviceId: bigint | number;
  keyFile: string;
  operatorId: string;
  image: string;
  /** SANDBOX_EXTRA_LABELS: the labels that let the test find (and remove) what it created. */
  labels: string;
  dataDir?: string;
  port?: number;
  /** Anything else (OPERATOR_MODE, TEE_*, LOG_LEVEL, …); wins over the fields above. */
  extra?: Record<string, string>;
}

/** The environment of an operator on the devnet in TEST_MODE, with a fresh session secret. */
export function devnetOperatorEnv(o: DevnetOperatorEnv, sessionSecret: string): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '/tmp',
    HTTP_RPC_URL: o.devnet.rpcUrl,
    TANGLE_CONTRACT: o.devnet.contracts.tangle,
    BLUEPRINT_ID: `${o.blueprintId}`,
    SERVICE_ID: `${o.serviceId}`,
    ...(o.dataDir !== undefined ? { DATA_DIR: o.dataDir } : {}),
    KEYSTORE_URI: o.keyFile,
    TEST_MODE: 'true',
    SESSION_AUTH_SECRET: sessionSecret,
    ...(o.port !== undefined ? { OPERATOR_API_PORT: `${o.port}` } : {}),
    OPERATOR_ID: o.operatorId,
    SANDBOX_IMAGE: o.image,
    SANDBOX_EXTRA_LABELS: o.labels,
    JOB_POLL_INTERVAL_MS: '200',
    ...o.extra,
  };
}

export interface SpawnOperatorOptions {
  env: Record<string, string>;
  /**
   * 'bin' (default): the launcher; 'main': src/main.ts under tsx, one process (SIGKILL hits the
   * operator); 'bundle': dist/main.mjs, what the published bin runs (build it first).
   */
  via?: 'bin' | 'main' | 'bundle';
  /** With via 'bundle': another bundle file than dist/main.mjs (e.g. an older build, for an A/B bench). */
  bundle?: string;
  /** Where stderr goes: a file descriptor (a log file) or 'pipe' (the default). stdout is always piped. */
  stderr?: number | 'pipe';
  /** Its own process group (so the test can signal the whole group). */
  detached?: boolean;
  /** The kernel TERMs the operator when this process dies, even by SIGKILL (setpriv --pdeathsig). */
  dieWithParent?: boolean;
  cwd?: string;
  /** The subcommand and its options; `['run']` unless told. */
  args?: string[];
}

/**
 * The Node flags a bundle's shebang names (`#!/usr/bin/env -S node FLAGS`, written by
 * scripts/build-bins.mjs), so `node main.mjs` here runs as the installed bin does.
 */
export function bundleNodeFlags(file: string): string[] {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(256);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').split('\n')[0]!;
    const m = /^#!\/usr\/bin\/env -S node((?: --[a-z0-9-]+(?:=[^\s]+)?)*)\s*$/.exec(first);
    return m?.[1] ? m[1].trim().split(/\s+/) : [];
  } finally {
    closeSync(fd);
  }
}

/** Spawns `agent-sandbox-operator run` (or `args`); wait for it with `operatorReady`. */
export function spawnOperator(o: SpawnOperatorOptions): ChildProcess {
  const args = o.args ?? ['run'];
  const program =
    o.via === 'main'
      ? [
          '--import',
          pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href,
          OPERATOR_MAIN,
          ...args,
        ]
      : o.via === 'bundle'
        ? [...bundleNodeFlags(o.bundle ?? OPERATOR_BUNDLE), o.bundle ?? OPERATOR_BUNDLE, ...args]
        : [OPERATOR_BIN, ...args];
  const setpriv = o.dieWithParent
    ? ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p))
    : undefined;
  const [cmd, argv] = setpriv
    ? [setpriv, ['--pdeathsig', 'TERM', '--', process.execPath, ...program]]
    : [process.execPath, program];
  return spawn(cmd, argv, {
    env: o.env,
    stdio: ['ignore', 'pipe', o.stderr ?? 'pipe'],
    ...(o.detached ? { detached: true } : {}),
    ...(o.cwd ? { cwd: o.cwd } : {}),
  });
}

export interface OperatorReadyOptions {
  /** Names the process in errors ("operator1 not ready …"). */
  name?: string;
  /** Rejects after this long; no limit unless given. */
  timeoutMs?: number;
  /** The end of the operator's log, for the error when it never gets ready. */
  log: () => string;
}

/** The operator's "ready" log line: its address and API URL. */
export interface OperatorReadyLine {
  operator: string;
  api: string;
}

/** Resolves with the API URL from the operator's "ready" line; rejects if it exits (or times out) first. */
export async function operatorReady(child: ChildProcess, o: OperatorReadyOptions): Promise<string> {
  return (await operatorReadyLine(child, o)).api;
}

/** Resolves with the operator's parsed "ready" line; rejects if it exits (or times out) first. */
export function operatorReadyLine(child: ChildProcess, o: OperatorReadyOptions): Promise<OperatorReadyLine> {
  const name = o.name ?? 'operator';
  return new Promise((res, rej) => {
    let buf = '';
    let settled = false;
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => done(new Error(`${name} not ready in ${o.timeoutMs! / 1000} s:\n${o.log()}`)),
            o.timeoutMs,
          );
    // The listener stays after ready: it keeps draining stdout so the operator never blocks on it.
    const onData = (d: Buffer) => {
      if (settled) return;
      buf += d.toString();
      // Only whole lines: a chunk may end in the middle of the ready line.
      const line = buf
        .split('\n')
        .slice(0, -1)
        .find((l) => l.includes('"event":"ready"'));
      if (line) done(undefined, JSON.parse(line) as OperatorReadyLine);
    };
    const onExit = (code: number | null, sig: NodeJS.Signals | null) =>
      done(new Error(`${name} exited (${sig ?? code}) before ready:\n${o.log()}`));
    function done(err: Error | undefined, ready?: OperatorReadyLine) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.off('exit', onExit);
      if (err) rej(err);
      else res(ready!);
    }
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
export async function stopOperator(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(t);
}
