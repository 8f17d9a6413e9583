// The live terminal sessions of this sidecar, by id; exited ones stay listed until deleted.
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity } from '../exec/run-process.ts';
import { TerminalSession } from './terminal-session.ts';

export class TerminalRegistry {
  readonly #sessions = new Map<string, TerminalSession>();
  constructor(private readonly config: SidecarConfig) {}

  create(opts: {
    cwd: string;
    cols: number;
    rows: number;
    env?: Record<string, string>;
    title?: string;
  }): TerminalSession {
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
    const s = this.#sessions.get(id);
    if (!s) throw new SidecarError('SESSION_NOT_FOUND', `no terminal session '${id}'`, 404);
    return s;
  }

  list(): TerminalSession[] {
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
