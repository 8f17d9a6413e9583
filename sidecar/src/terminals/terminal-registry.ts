// The terminal sessions of this sidecar, by id. An exited one stays listed (its exit code and
// scrollback, up to 256 KiB, can still be read) until deleted, but not forever: only the
// `keep` most recently exited are kept, each for `retentionMs` after it exited.
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity } from '../exec/run-process.ts';
import { TerminalSession } from './terminal-session.ts';

export interface ExitedTerminalLimits {
  keep: number;
  retentionMs: number;
  /** The clock (tests move it). */
  now?: () => number;
}

export const EXITED_TERMINAL_LIMITS: ExitedTerminalLimits = { keep: 16, retentionMs: 15 * 60_000 };

export class TerminalRegistry {
  readonly #sessions = new Map<string, TerminalSession>();
  constructor(
    private readonly config: SidecarConfig,
    private readonly exited: ExitedTerminalLimits = EXITED_TERMINAL_LIMITS,
  ) {}

  /** Drops exited sessions past their retention, then all but the `keep` most recently exited. */
  #prune(): void {
    const now = (this.exited.now ?? Date.now)();
    // Newest first; on a tie in exit time, the later created first.
    const done = [...this.#sessions.values()]
      .reverse()
      .filter((s) => s.exitedAt !== undefined)
      .sort((a, b) => (b.exitedAt ?? 0) - (a.exitedAt ?? 0));
    for (const [i, s] of done.entries()) {
      if (i >= this.exited.keep || now - (s.exitedAt ?? now) > this.exited.retentionMs) {
        s.close();
        this.#sessions.delete(s.id);
      }
    }
  }

  create(opts: {
    cwd: string;
    cols: number;
    rows: number;
    env?: Record<string, string>;
    title?: string;
  }): TerminalSession {
    this.#prune();
    const running = [...this.#sessions.values()].filter((s) => s.running).length;
    if (running >= this.config.maxTerminals) {
      throw new SidecarError(
        'TOO_MANY_SESSIONS',
        `${running} terminals are running (limit ${this.config.maxTerminals}); delete one first`,
        429,
      );
    }
    const session = new TerminalSession({
      shell: '/bin/bash',
      cwd: opts.cwd,
      cols: opts.cols,
      rows: opts.rows,
      title: opts.title,
      env: childEnv(this.config, { TERM: 'xterm-256color', ...opts.env }),
      ...identity(this.config.uid, this.config.gid),
    });
    this.#sessions.set(session.id, session);
    return session;
  }

  get(id: string): TerminalSession {
    this.#prune();
    const s = this.#sessions.get(id);
    if (!s) throw new SidecarError('SESSION_NOT_FOUND', `no terminal session '${id}'`, 404);
    return s;
  }

  list(): TerminalSession[] {
    this.#prune();
    return [...this.#sessions.values()];
  }

  delete(id: string): void {
    const s = this.get(id);
    s.close();
    this.#sessions.delete(id);
  }

  closeAll(): void {
    for (const s of this.#sessions.values()) s.close();
    this.#sessions.clear();
  }
}
