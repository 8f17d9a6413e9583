// Test support: a real sidecar on a random loopback port with a throwaway workspace owned by the agent uid.
import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type SidecarConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { type RunningSidecar, type StartOptions, startSidecar } from '../server.ts';

// Tests read fields of many response shapes; a loose type keeps them short.
// biome-ignore lint/suspicious/noExplicitAny: test-only convenience
type CallJson = any;

export interface SidecarFixture {
  sidecar: RunningSidecar;
  config: SidecarConfig;
  token: string;
  workspace: string;
  /** JSON request with the bearer token (pass `token: null` to send none). */
  call(
    method: string,
    path: string,
    body?: unknown,
    opts?: { token?: string | null; raw?: string },
  ): Promise<{ status: number; json: CallJson; headers: Headers }>;
  close(): Promise<void>;
}

export async function startSidecarFixture(
  env: Record<string, string> = {},
  start: StartOptions = {},
): Promise<SidecarFixture> {
  const workspace = await mkdtemp(join(tmpdir(), 'sidecar-ws-'));
  await chown(workspace, 1000, 1000);
  const token = randomBytes(32).toString('hex');
  const config = loadConfig({
    PATH: process.env['PATH'],
    SIDECAR_PORT: '0',
    SIDECAR_HOST: '127.0.0.1',
    SIDECAR_AUTH_TOKEN: token,
    AGENT_WORKSPACE_ROOT: workspace,
    AGENT_HOME: workspace,
    SIDECAR_LOG_LEVEL: process.env['SIDECAR_TEST_LOG'] ?? 'silent',
    ...env,
  });
  const sidecar = await startSidecar(config, createLogger(config.logLevel), start);
  return {
    sidecar,
    config,
    token,
    workspace,
    async call(method, path, body, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const t = opts.token === undefined ? token : opts.token;
      if (t !== null) headers['authorization'] = `Bearer ${t}`;
      const res = await fetch(`${sidecar.url}${path}`, {
        method,
        headers,
        body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { status: res.status, json, headers: res.headers };
    },
    async close() {
      await sidecar.close();
      // A shell the test opened may still be writing its last files as it exits (bash writes
      // .bash_history on SIGHUP) while the directory is removed: ENOTEMPTY, seen once in CI on
      // console/test/tee.browser.test.ts. rm retries that (and EBUSY) instead of failing the file.
      await rm(workspace, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

export interface SseFrame {
  event?: string;
  data: string;
}

/** Reads SSE frames from a fetch response until `stop` says so or the stream ends. */
export async function readSse(
  res: Response,
  stop: (f: SseFrame, all: SseFrame[]) => boolean,
  timeoutMs = 20_000,
): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const deadline = setTimeout(() => reader.cancel().catch(() => {}), timeoutMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: SseFrame = { data: '' };
        const data: string[] = [];
        let any = false;
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) f.event = line.slice(7);
          else if (line.startsWith('data: ')) {
            data.push(line.slice(6));
            any = true;
          }
        }
        if (!any) continue;
        f.data = data.join('\n');
        frames.push(f);
        if (stop(f, frames)) {
          await reader.cancel().catch(() => {});
          return frames;
        }
      }
    }
  } finally {
    clearTimeout(deadline);
  }
  return frames;
}
