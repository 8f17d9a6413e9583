// One interactive shell on a real PTY (through the python3 PTY driver), with scrollback and live subscribers.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { SidecarError } from '../errors.ts';
import { PTY_HELPER_SOURCE } from './pty-helper.ts';

const SCROLLBACK_CHARS = 256 * 1024;

export interface TerminalSessionOptions {
  shell: string;
  cwd: string;
  cols: number;
  rows: number;
  env: Record<string, string>;
  title?: string;
  uid?: number;
  gid?: number;
}

export interface TerminalSummary {
  sessionId: string;
  title: string;
  shell: string;
  cwd: string;
  cols: number;
  rows: number;
  status: 'running' | 'exited';
  exitCode: number | null;
  pid: number | null;
  createdAt: string;
  streamUrl: string;
}

export type TerminalEvent = { type: 'data'; text: string } | { type: 'exit'; exitCode: number | null };

export class TerminalSession {
  readonly id = randomUUID();
  readonly createdAt = new Date();
  #cols: number;
  #rows: number;
  #exitCode: number | null = null;
  #exited = false;
  #exitedAt: number | undefined;
  #scrollback = '';
  readonly #listeners = new Set<(ev: TerminalEvent) => void>();
  readonly #child: ChildProcess;
  readonly #ctrl: Writable;
  readonly #decoder = new StringDecoder('utf8');

  constructor(private readonly opts: TerminalSessionOptions) {
    this.#cols = opts.cols;
    this.#rows = opts.rows;
    this.#child = spawn(
      'python3',
      ['-c', PTY_HELPER_SOURCE, String(opts.cols), String(opts.rows), opts.shell, '-l'],
      {
        cwd: opts.cwd,
        env: opts.env,
        uid: opts.uid,
        gid: opts.gid,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      },
    );
    this.#ctrl = this.#child.stdio[3] as Writable;
    // A write to a helper that just died must not crash the sidecar.
    this.#child.stdin!.on('error', () => {});
    this.#ctrl.on('error', () => {});
    this.#child.stdout!.on('data', (c: Buffer) => this.#emitText(this.#decoder.write(c)));
    this.#child.stderr!.on('data', (c: Buffer) => this.#emitText(c.toString('utf8')));
    this.#child.on('error', () => this.#onExit(127));
    this.#child.on('exit', (code, sig) => this.#onExit(code ?? (sig ? 128 : 1)));
  }

  #emitText(text: string): void {
    if (!text) return;
    this.#scrollback += text;
    if (this.#scrollback.length > SCROLLBACK_CHARS) {
      this.#scrollback = this.#scrollback.slice(this.#scrollback.length - SCROLLBACK_CHARS);
    }
    for (const l of this.#listeners) l({ type: 'data', text });
  }

  #onExit(code: number): void {
    if (this.#exited) return;
    this.#emitText(this.#decoder.end());
    this.#exited = true;
    this.#exitedAt = Date.now();
    this.#exitCode = code;
    for (const l of this.#listeners) l({ type: 'exit', exitCode: code });
    this.#listeners.clear();
  }

  get running(): boolean {
    return !this.#exited;
  }

  /** When the shell exited (ms since the epoch), or undefined while it runs. */
  get exitedAt(): number | undefined {
    return this.#exitedAt;
  }

  summary(): TerminalSummary {
    return {
      sessionId: this.id,
      title: this.opts.title ?? 'Terminal',
      shell: this.opts.shell,
      cwd: this.opts.cwd,
      cols: this.#cols,
      rows: this.#rows,
      status: this.#exited ? 'exited' : 'running',
      exitCode: this.#exitCode,
      pid: this.#child.pid ?? null,
      createdAt: this.createdAt.toISOString(),
      streamUrl: `/terminals/${this.id}/stream`,
    };
  }

  /** Replays scrollback, then streams live; returns an unsubscribe function. */
  subscribe(fn: (ev: TerminalEvent) => void): () => void {
    if (this.#scrollback) fn({ type: 'data', text: this.#scrollback });
    if (this.#exited) {
      fn({ type: 'exit', exitCode: this.#exitCode });
      return () => {};
    }
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #assertRunning(): void {
    if (this.#exited) {
      throw new SidecarError(
        'SESSION_NOT_RUNNING',
        `terminal ${this.id} has exited (code ${this.#exitCode}); create a new one`,
        409,
      );
    }
  }

  write(data: string): void {
    this.#assertRunning();
    this.#child.stdin!.write(data);
  }

  resize(cols: number, rows: number): void {
    this.#assertRunning();
    this.#cols = cols;
    this.#rows = rows;
    this.#ctrl.write(`resize ${cols} ${rows}\n`);
  }

  /** Hangs up the shell; KILLs the driver's group if it lingers. */
  close(): void {
    if (this.#exited) return;
    this.#child.stdin!.end();
    const pid = this.#child.pid;
    const t = setTimeout(() => {
      if (pid && !this.#exited) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }
    }, 2_000);
    t.unref();
  }
}
