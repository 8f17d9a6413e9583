// Runs one child as the agent user in its own process group: bounded output, timeout (TERM, KILL after 2 s), cancel.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { SidecarError } from '../errors.ts';
import { BoundedOutput } from './bounded-output.ts';

export const TIMEOUT_EXIT_CODE = 124;
export const KILL_GRACE_MS = 2_000;

export interface RunProcessOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Set only when the sidecar runs as root; a non-root sidecar runs children as itself. */
  uid?: number;
  gid?: number;
  timeoutMs: number;
  outputLimitBytes: number;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  signal?: AbortSignal;
  /** Called with the child's pid once it is started (before any abort listener of runProcess's own). */
  onSpawn?: (pid: number) => void;
}

export interface RunProcessResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  cancelled: boolean;
}

/** Signals the whole process group (the child is a group leader), ignoring groups already gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {}
}

/** TERM the group now, KILL it after the grace period; returns a canceller for the KILL timer. */
export function terminateGroup(pid: number | undefined, graceMs = KILL_GRACE_MS): () => void {
  killGroup(pid, 'SIGTERM');
  const t = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
  t.unref();
  return () => clearTimeout(t);
}

export function identity(uid: number, gid: number): { uid?: number; gid?: number } {
  return process.getuid?.() === 0 ? { uid, gid } : {};
}

export function runProcess(opts: RunProcessOptions): Promise<RunProcessResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const out = new BoundedOutput(opts.outputLimitBytes);
    const err = new BoundedOutput(opts.outputLimitBytes);
    let timedOut = false;
    let cancelled = false;
    let settled = false;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(opts.argv[0]!, opts.argv.slice(1), {
        cwd: opts.cwd,
        env: opts.env,
        uid: opts.uid,
        gid: opts.gid,
        // Its own session and process group, so timeout and cancel reach every descendant.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      reject(new SidecarError('SPAWN_FAILED', `cannot start ${opts.argv[0]}: ${(e as Error).message}`, 500));
      return;
    }
    if (child.pid) opts.onSpawn?.(child.pid);
    let stopKill = () => {};
    const timer = setTimeout(() => {
      timedOut = true;
      stopKill = terminateGroup(child.pid);
    }, opts.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      stopKill = terminateGroup(child.pid);
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();

    child.stdout!.on('data', (c: Buffer) => {
      out.push(c);
      opts.onStdout?.(c);
    });
    child.stderr!.on('data', (c: Buffer) => {
      err.push(c);
      opts.onStderr?.(c);
    });

    const finish = (code: number | null, sig: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      // Descendants that outlive the child keep our pipes open; stop reading from them.
      child.stdout!.destroy();
      child.stderr!.destroy();
      if (!timedOut && !cancelled) stopKill();
      const signalCode = sig ? 128 + (signalNumber(sig) ?? 15) : 1;
      resolve({
        exitCode: timedOut ? TIMEOUT_EXIT_CODE : (code ?? signalCode),
        stdout: out.text(),
        stderr: err.text(),
        durationMs: Math.round(performance.now() - started),
        timedOut,
        cancelled,
      });
    };
    let drainTimer: NodeJS.Timeout | undefined;
    child.on('exit', (code, sig) => {
      // Give the pipes a moment to deliver what the child wrote before it exited.
      drainTimer = setTimeout(() => finish(code, sig), 250);
      child.on('close', () => finish(code, sig));
    });
    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new SidecarError('SPAWN_FAILED', `cannot start ${opts.argv[0]}: ${e.message}`, 500));
    });
  });
}

function signalNumber(sig: NodeJS.Signals): number | undefined {
  return constants.signals[sig];
}
