// What the sandbox screens (exec, files, terminals) need from a sandbox, whichever way it is
// reached: through the operator API (apiOps) or end to end over a TEE enclave's owner channel
// (tee-panels.tsx adapts TeeOps). One set of screens serves both.
import type { SseEvent } from './api.ts';
import { api } from './main.tsx';

export interface Entry {
  name: string;
  type: string;
  size: number;
}

export interface ExecResult {
  exit_code: number;
  stdout: string;
  stderr: string;
}

export interface TerminalOps {
  /** A new PTY of this size; its id. */
  create(cols: number, rows: number): Promise<string>;
  /** Calls `onEvent` with the PTY's frames until its stream ends or `signal` hangs it up. */
  stream(id: string, onEvent: (e: SseEvent) => void, signal: AbortSignal): Promise<void>;
  input(id: string, data: string): Promise<void>;
  resize(id: string, cols: number, rows: number): Promise<void>;
  close(id: string): Promise<void>;
}

export interface SandboxOps {
  /** Tells the screens apart when the sandbox changes (effects restart on it). */
  readonly key: string;
  exec(command: string): Promise<ExecResult>;
  list(path: string): Promise<{ path: string; entries: Entry[] }>;
  read(path: string): Promise<Blob>;
  write(path: string, content: Blob): Promise<void>;
  terminal: TerminalOps;
}

/** The sandbox through the operator API, with the signed-in session. */
export function apiOps(sandbox: string): SandboxOps {
  const base = `/api/sandboxes/${sandbox}`;
  const q = (path: string) => `?path=${encodeURIComponent(path)}`;
  const term = `${base}/terminals`;
  return {
    key: sandbox,
    exec: (command) => api.json('POST', `${base}/exec`, { command }),
    list: (path) => api.json('GET', `${base}/files${q(path)}`),
    read: async (path) => (await api.raw('GET', `${base}/files/content${q(path)}`)).blob(),
    write: async (path, content) => {
      await api.raw('PUT', `${base}/files/content${q(path)}`, content);
    },
    terminal: {
      create: async (cols, rows) => {
        const r = await api.json<{ sessionId?: string; data?: { sessionId?: string } }>('POST', term, {
          cols,
          rows,
        });
        const id = r.sessionId ?? r.data?.sessionId;
        if (!id) throw new Error('the operator answered without a terminal id');
        return id;
      },
      stream: (id, onEvent, signal) => api.stream(`${term}/${id}/stream`, onEvent, { signal }),
      input: async (id, data) => {
        await api.json('POST', `${term}/${id}/input`, { data });
      },
      resize: async (id, cols, rows) => {
        await api.json('PATCH', `${term}/${id}`, { cols, rows });
      },
      close: async (id) => {
        await api.raw('DELETE', `${term}/${id}`);
      },
    },
  };
}
