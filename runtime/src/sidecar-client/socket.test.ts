// SidecarClient over a Unix socket (sandboxes without a network): JSON calls and an SSE stream
// reach a real HTTP server listening on a socket path, and a missing socket is a clear error.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { SidecarClient } from './client.ts';

const TOKEN = randomBytes(32).toString('hex');
let dir: string;
let path: string;
let server: Server;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sc-sock-'));
  path = join(dir, 'sidecar.sock');
  server = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(403).end();
      return;
    }
    if (req.url === '/terminals/commands') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, result: { exitCode: 0, stdout: 'via-socket', stderr: '' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: execution.started\ndata: {}\n\n');
    res.end('event: result\ndata: {"finalText":"done"}\n\n');
  });
  await new Promise<void>((r) => server.listen(path, () => r()));
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('SidecarClient over a Unix socket', () => {
  it('execs and streams through the socket path', async () => {
    const c = new SidecarClient({
      sandboxId: 's',
      baseUrl: 'http://localhost',
      token: TOKEN,
      socketPath: path,
    });
    expect((await c.exec({ command: 'x' })).stdout).toBe('via-socket');
    const events = [];
    for await (const e of c.streamAgent({ message: 'hi' })) events.push(e.event);
    expect(events).toEqual(['execution.started', 'result']);
  });

  it('a socket nobody listens on is reported as an unreachable sidecar', async () => {
    const c = new SidecarClient({
      sandboxId: 's2',
      baseUrl: 'http://localhost',
      token: TOKEN,
      socketPath: join(dir, 'gone.sock'),
    });
    const err = await c.exec({ command: 'x' }).catch((e: unknown) => e);
    expect(isRuntimeError(err) && err.code).toBe('SIDECAR_ERROR');
    expect((err as Error).message).toMatch(/not accepting connections; is the sandbox running/);
    expect((err as Error).message).not.toContain(TOKEN);
  });
});
