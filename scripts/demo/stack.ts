// The demo's running parts: the local devnet (anvil, foreground) and both devnet operators
// (`agent-sandbox-operator devnet`), started in order and stopped in reverse, leaving nothing behind.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { operatorReadyLine, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { type StartedDevnet, startDevnet } from '@agent-sandbox/devnet';
import Docker from 'dockerode';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const DEVNET_DIR = join(ROOT, '.devnet');
export const STATE_FILE = join(DEVNET_DIR, 'devnet.json');
export const DEMO_DIR = join(DEVNET_DIR, 'demo');
export const LOCK_FILE = join(DEVNET_DIR, 'demo.pid');
/** Every container the demo's operators create carries this label, so teardown finds them all. */
export const DEMO_LABEL = 'agent-sandbox.demo=1';
/** The API ports the devnet registers for operator1 / operator2 (devnet/deploy.ts). */
export const OPERATOR_PORTS = { operator1: 9090, operator2: 9091 } as const;
export type OperatorName = keyof typeof OPERATOR_PORTS;

export interface RunningOperator {
  name: OperatorName;
  url: string;
  address: string;
  logFile: string;
  child: ChildProcess;
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The pid of a demo that is running now (its lock file names a live process), if any. */
export function runningDemoPid(): number | undefined {
  if (!existsSync(LOCK_FILE)) return undefined;
  const pid = Number(readFileSync(LOCK_FILE, 'utf8').trim());
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) return pid;
  return undefined;
}

export function takeLock(): void {
  mkdirSync(DEVNET_DIR, { recursive: true });
  writeFileSync(LOCK_FILE, `${process.pid}\n`);
}

export function releaseLock(): void {
  if (existsSync(LOCK_FILE) && readFileSync(LOCK_FILE, 'utf8').trim() === String(process.pid))
    rmSync(LOCK_FILE, { force: true });
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portAnswers(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (v: boolean) => {
      s.destroy();
      res(v);
    };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.setTimeout(1000, () => done(false));
  });
}

export async function operatorHealthy(url: string): Promise<boolean> {
  try {
    const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(3000) });
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Removes containers a demo's operators created (by label). Returns how many. */
export async function removeDemoContainers(): Promise<number> {
  const docker = new Docker();
  const list = await docker.listContainers({ all: true, filters: { label: [DEMO_LABEL] } });
  for (const c of list) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
  return list.length;
}

/** Starts (or reuses) the devnet on 127.0.0.1:8545. A devnet this call starts dies with this process. */
export async function startDemoDevnet(log: (line: string) => void): Promise<StartedDevnet> {
  return startDevnet({ port: 8545, stateFile: STATE_FILE, reuse: true, detach: false, log });
}

/**
 * Operator state belongs to one chain: a job cursor or sandbox records from an earlier devnet
 * would point at blocks and jobs that no longer exist. The data dirs are wiped when the chain changed.
 */
export function prepareDataDirs(devnet: StartedDevnet): void {
  const marker = join(DEMO_DIR, 'chain.txt');
  const chain = `${devnet.info.contracts.tangle} ${devnet.info.startedAt}\n`;
  const same = existsSync(marker) && readFileSync(marker, 'utf8') === chain;
  if (!same) {
    for (const name of Object.keys(OPERATOR_PORTS))
      rmSync(join(DEMO_DIR, name), { recursive: true, force: true });
  }
  mkdirSync(DEMO_DIR, { recursive: true });
  writeFileSync(marker, chain);
}

/**
 * Starts `agent-sandbox-operator devnet --operator NAME` from its bundle (what the published bin
 * runs) through the shared spawn helper, and resolves once its API is ready. The kernel TERMs the
 * operator if this driver dies (even by SIGKILL); its own process group, so a Ctrl-C in the
 * terminal reaches only the driver, which stops the operators in order (one SIGTERM each).
 */
export async function startOperator(name: OperatorName, image: string | undefined): Promise<RunningOperator> {
  const dataDir = join(DEMO_DIR, name);
  mkdirSync(dataDir, { recursive: true });
  const logFile = join(DEMO_DIR, `${name}.log`);
  const child = spawnOperator({
    via: 'bundle',
    args: ['devnet', '--operator', name],
    cwd: ROOT,
    detached: true,
    dieWithParent: true,
    stderr: openSync(logFile, 'a'),
    env: {
      ...(process.env as Record<string, string>),
      DATA_DIR: dataDir,
      OPERATOR_API_PORT: String(OPERATOR_PORTS[name]),
      SANDBOX_EXTRA_LABELS: DEMO_LABEL,
      JOB_POLL_INTERVAL_MS: '300',
      LOG_PRETTY: 'true',
      ...(image ? { SANDBOX_IMAGE: image } : {}),
    },
  });
  const log = () =>
    `last lines of ${logFile}:\n${readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n')}`;
  try {
    const ready = await operatorReadyLine(child, { name, timeoutMs: 120_000, log });
    return { name, url: ready.api, address: ready.operator, logFile, child };
  } catch (e) {
    child.kill('SIGTERM');
    throw e;
  }
}

/** SIGTERM (the operator finishes in-flight jobs and closes its store), SIGKILL after `graceMs`. */
export async function stopOperator(op: { child: ChildProcess }, graceMs = 20_000): Promise<void> {
  const c = op.child;
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((r) => c.once('exit', () => r()));
  c.kill('SIGTERM');
  const t = setTimeout(() => {
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {
      c.kill('SIGKILL');
    }
  }, graceMs);
  await exited;
  clearTimeout(t);
}
