// SidecarClient against a real HTTP server on 127.0.0.1 speaking the sidecar contract (and
// misbehaving on purpose: hanging, oversize, failing).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isRuntimeError, type RuntimeError } from '../errors.ts';
import { CircuitBreaker } from './circuit-breaker.ts';
import { SidecarClient } from './client.ts';

const TOKEN = randomBytes(32).toString('hex');
let server: Server;
let baseUrl: string;
/** What the server saw, per request. */
let seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }>;
let hang = false;
let streamClosed: Promise<void>;
let markStreamClosed: () => void;

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const fail = (res: ServerResponse, status: number, code: string, message: string) =>
  json(res, status, { success: false, error: { code, message } });

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body = '';
  for await (const c of req) body += c;
  seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
  if (hang || req.url === '/hang') return; // never answer
  if (req.url === '/health') return json(res, 200, { status: 'ok', timestamp: Date.now() });
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return fail(res, 403, 'FORBIDDEN', 'invalid token');
  const parsed = body ? (JSON.parse(body) as Record<string, unknown>) : {};
  switch (`${req.method} ${req.url}`) {
    case 'POST /terminals/commands': {
      if (!parsed.command) return fail(res, 400, 'INVALID_COMMAND', 'command is required');
      const result = { exitCode: 0, stdout: `ran: ${parsed.command}`, stderr: '', duration: 3 };
      return json(res, 200, { success: true, result, ...result });
    }
    case 'POST /agents/run':
      return json(res, 200, { success: true, response: 'hi', data: { finalText: 'hi' }, sessionId: 's1' });
    case 'POST /agents/run/stream': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keep-alive\n\n');
      res.write('event: execution.started\ndata: {"sessionId":"s1"}\n\n');
      res.write('event: message.part.updated\ndata: {"part":{"id":"p1","type":"text","text":"he"}}\n\n');
      res.end('event: result\ndata: {"finalText":"hello"}\n\n');
      return;
    }
    case 'GET /terminals/t%201/stream': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.on('close', () => markStreamClosed());
      let n = 0;
      const timer = setInterval(() => {
        res.write(
          `data: ${JSON.stringify({ type: 'data.stdout', properties: { text: `tick ${n++}` } })}\n\n`,
        );
      }, 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    case 'GET /terminals/missing':
      return fail(res, 404, 'SESSION_NOT_FOUND', 'terminal missing not found');
    case 'POST /terminals/dead/input':
      return fail(res, 409, 'SESSION_NOT_RUNNING', 'terminal dead has exited');
    case 'POST /files/read':
      if (parsed.path === '/etc/passwd')
        return fail(res, 403, 'PATH_OUTSIDE_WORKSPACE', 'outside the workspace');
      if (parsed.path === 'huge.bin')
        return json(res, 200, { success: true, data: { content: 'x'.repeat(9 << 20) } });
      if (parsed.path === 'leak') return fail(res, 400, 'INVALID_REQUEST', `bad header Bearer ${TOKEN}`);
      return json(res, 200, { success: true, data: { content: 'file body' } });
    case 'POST /agents/run/cancel':
      return fail(res, 500, 'INTERNAL', 'stack trace at /app/secret/internal.js:12');
    default:
      return fail(res, 404, 'NOT_FOUND', 'no route');
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  seen = [];
  hang = false;
  streamClosed = new Promise((r) => {
    markStreamClosed = r;
  });
});

async function errorOf(p: Promise<unknown>): Promise<RuntimeError> {
  try {
    await p;
  } catch (e) {
    if (isRuntimeError(e)) return e;
    throw e;
  }
  throw new Error('expected a RuntimeError, got success');
}

function expectNoToken(err: RuntimeError) {
  expect(err.message).not.toContain(TOKEN);
  expect(JSON.stringify(err.details ?? {})).not.toContain(TOKEN);
}

describe('SidecarClient', () => {
  it('calls exec with the bearer token and forwards x-request-id', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    const out = await client.exec({ command: 'echo hi', cwd: '/home/agent' }, { requestId: 'req-42' });
    expect(out).toEqual({ exitCode: 0, stdout: 'ran: echo hi', stderr: '', duration: 3 });
    const [r] = seen;
    expect(r?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(r?.headers['x-request-id']).toBe('req-42');
    expect(JSON.parse(r?.body ?? '')).toEqual({ command: 'echo hi', cwd: '/home/agent' });
    expect((await client.health()).status).toBe('ok');
    expect((await client.runAgent({ message: 'hello' })).response).toBe('hi');
    expect((await client.readFile('notes.txt')).content).toBe('file body');
  });

  it('sends timeoutMs as timeout_ms, and as timeout for sidecars older than the rename', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    await client.exec({ command: 'true', timeoutMs: 1234 });
    await client.runAgent({ message: 'hello', timeoutMs: 5678 });
    for await (const _ of client.streamAgent({ message: 'hello', timeoutMs: 91 })) {
      // drain
    }
    expect(seen.map((r) => JSON.parse(r.body))).toEqual([
      { command: 'true', timeout_ms: 1234, timeout: 1234 },
      { message: 'hello', timeout_ms: 5678, timeout: 5678 },
      { message: 'hello', timeout_ms: 91, timeout: 91 },
    ]);
  });

  it('maps sidecar errors to runtime errors, passing through what the user can act on', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    const v = await errorOf(client.exec({ command: '' }));
    expect([v.code, v.status, v.message]).toEqual(['VALIDATION', 400, 'command is required']);
    const nf = await errorOf(client.getTerminal('missing'));
    expect([nf.code, nf.status]).toEqual(['SESSION_NOT_FOUND', 404]);
    const dead = await errorOf(client.terminalInput('dead', 'ls\n'));
    expect([dead.code, dead.status]).toEqual(['CONFLICT', 409]);
    const outside = await errorOf(client.readFile('/etc/passwd'));
    expect([outside.code, outside.status]).toEqual(['FORBIDDEN', 403]);
    const internal = await errorOf(client.cancelAgent());
    expect([internal.code, internal.status]).toEqual(['SIDECAR_ERROR', 502]);
    expect(internal.message).not.toContain('stack trace');
    const route = await errorOf(client.request('default', 'GET', '/nope', undefined));
    expect(route.code).toBe('SIDECAR_ERROR');
    const leak = await errorOf(client.readFile('leak'));
    expect(leak.message).toContain('[redacted]');
    for (const e of [v, nf, dead, outside, internal, route, leak]) expectNoToken(e);
  });

  it('reports a wrong operator token as the operator’s problem (502), never echoing it', async () => {
    const wrong = randomBytes(32).toString('hex');
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: wrong });
    const err = await errorOf(client.exec({ command: 'id' }));
    expect([err.code, err.status]).toEqual(['SIDECAR_ERROR', 502]);
    expect(err.message).not.toContain(wrong);
  });

  it('refuses a response larger than the bound', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    const err = await errorOf(client.readFile('huge.bin'));
    expect(err.code).toBe('SIDECAR_ERROR');
    expect(err.message).toMatch(/exceeded 8 MiB/);
    const small = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN }, { maxResponseBytes: 10 });
    expect((await errorOf(small.readFile('notes.txt'))).message).toMatch(/exceeded/);
  });

  it('maps a refused connection to SIDECAR_ERROR', async () => {
    const tmp = createServer();
    await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
    const port = (tmp.address() as AddressInfo).port;
    await new Promise((r) => tmp.close(r));
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl: `http://127.0.0.1:${port}`, token: TOKEN });
    const err = await errorOf(client.exec({ command: 'id' }));
    expect([err.code, err.status]).toEqual(['SIDECAR_ERROR', 502]);
    expect(err.message).toMatch(/not accepting connections/);
    expectNoToken(err);
  });

  it('times out a hanging sidecar (504) and opens the breaker; one probe later closes it', async () => {
    let now = 5_000_000;
    const breaker = new CircuitBreaker({ failureThreshold: 5, cooldownMs: 30_000, clock: () => now });
    const client = new SidecarClient({ sandboxId: 'sb-hang', baseUrl, token: TOKEN }, { breaker });
    hang = true;
    for (let i = 0; i < 5; i++) {
      const err = await errorOf(client.exec({ command: 'sleep 100' }, { timeoutMs: 100 }));
      expect([err.code, err.status]).toEqual(['SIDECAR_TIMEOUT', 504]);
      expectNoToken(err);
    }
    expect(seen).toHaveLength(5);
    const open = await errorOf(client.exec({ command: 'id' }, { timeoutMs: 100 }));
    expect([open.code, open.status]).toEqual(['CIRCUIT_OPEN', 503]);
    expect(open.details).toMatchObject({ retry_after_ms: 30_000 });
    expect(seen).toHaveLength(5); // refused without touching the sidecar
    // Other sandboxes keep working.
    hang = false;
    const other = new SidecarClient({ sandboxId: 'sb-ok', baseUrl, token: TOKEN }, { breaker });
    expect((await other.exec({ command: 'id' })).exitCode).toBe(0);

    // After the cooldown, exactly one probe reaches the sidecar; a concurrent call is refused.
    now += 30_000;
    hang = true;
    const probe = client.exec({ command: 'probe' }, { timeoutMs: 300 });
    const concurrent = await errorOf(client.exec({ command: 'second' }));
    expect(concurrent.code).toBe('CIRCUIT_OPEN');
    expect((await errorOf(probe)).code).toBe('SIDECAR_TIMEOUT');
    expect(breaker.state('sb-hang').state).toBe('open');
    now += 30_000;
    hang = false;
    expect((await client.exec({ command: 'recovered' })).stdout).toBe('ran: recovered');
    expect(breaker.state('sb-hang').state).toBe('closed');
  });

  it('does not trip the breaker on user errors or caller cancellation', async () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2 });
    const client = new SidecarClient({ sandboxId: 'sb-4xx', baseUrl, token: TOKEN }, { breaker });
    for (let i = 0; i < 4; i++) await errorOf(client.exec({ command: '' }));
    hang = true;
    for (let i = 0; i < 3; i++) {
      const ac = new AbortController();
      const p = client.exec({ command: 'x' }, { signal: ac.signal });
      setTimeout(() => ac.abort(), 30);
      const err = await errorOf(p);
      expect(err.details).toMatchObject({ cancelled: true });
    }
    expect(breaker.state('sb-4xx').state).toBe('closed');
  });

  it('streams agent events and terminal output; stopping early closes the connection', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    const events = [];
    for await (const e of client.streamAgent({ message: 'hi' }, { requestId: 'r-1' })) events.push(e);
    expect(events.map((e) => e.event)).toEqual(['execution.started', 'message.part.updated', 'result']);
    expect(JSON.parse(events[2]?.data ?? '')).toEqual({ finalText: 'hello' });
    expect(seen.at(-1)?.headers['x-request-id']).toBe('r-1');

    const ticks: string[] = [];
    for await (const e of client.streamTerminal('t 1', { timeoutMs: 50 })) {
      // The 50 ms deadline covers connecting only: the stream outlives it.
      ticks.push((JSON.parse(e.data) as { properties: { text: string } }).properties.text);
      if (ticks.length === 5) break;
    }
    expect(ticks).toEqual(['tick 0', 'tick 1', 'tick 2', 'tick 3', 'tick 4']);
    await streamClosed;
  });

  it('times out an agent stream as a whole', async () => {
    const client = new SidecarClient({ sandboxId: 'sb', baseUrl, token: TOKEN });
    hang = true;
    const gen = client.streamAgent({ message: 'x' }, { timeoutMs: 100 });
    const err = await errorOf(gen.next());
    expect(err.code).toBe('SIDECAR_TIMEOUT');
  });

  it('accepts only loopback sidecar addresses unless told otherwise', () => {
    for (const baseUrl of ['http://10.0.0.5:8080', 'http://example.com', 'ftp://127.0.0.1', 'nonsense']) {
      expect(() => new SidecarClient({ sandboxId: 's', baseUrl, token: TOKEN })).toThrow(/baseUrl/);
    }
    expect(() => new SidecarClient({ sandboxId: 's', baseUrl: 'http://localhost:1', token: '' })).toThrow(
      /token/,
    );
    expect(
      new SidecarClient(
        { sandboxId: 's', baseUrl: 'http://10.0.0.5:8080', token: TOKEN },
        { allowNonLoopback: true },
      ).sandboxId,
    ).toBe('s');
  });
});
