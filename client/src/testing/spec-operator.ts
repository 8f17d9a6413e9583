// Test-only: a small node:http server that speaks the operator API's client-facing contract
// (spec/operator-api.md) — real EIP-191 signature recovery, bearer sessions, the error shape,
// SSE with ids and Last-Event-ID — so the client is tested over real HTTP until the real operator
// exists. It holds state in memory and is not the operator; end-to-end tests replace it.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getAddress, recoverMessageAddress } from 'viem';
import { createSiweMessage } from 'viem/siwe';

export interface SpecSandbox {
  id: string;
  owner: string;
  state: 'running' | 'stopped';
  secrets: Record<string, string>;
  /** As the operator's view has it (epoch ms; null: not in this state). */
  timer_deadlines?: Record<string, number | null>;
  name?: string;
}

export interface SpecOperator {
  url: string;
  sandboxes: Map<string, SpecSandbox>;
  /** Tokens issued; delete one to simulate expiry/revocation (the next call gets 401). */
  tokens: Map<string, string>;
  provisions: Map<string, Record<string, unknown>>;
  /** Requests seen, as `METHOD path`, for assertions. */
  log: string[];
  /** Events each run will emit; the first events connection is cut after `cutAfter` events. */
  runScript: { events: Array<{ event: string; data: unknown }>; cutAfter?: number };
  cancelled: string[];
  terminalInput: string[];
  /** When set, every authenticated route answers 429 with this retry-after (seconds). */
  rateLimitSeconds: number | undefined;
  lastEventIds: Array<string | undefined>;
  close: () => Promise<void>;
}

/** The EIP-4361 sign-in message the real operator issues, naming the URL it is served at. */
const CHALLENGE = (origin: string, address: string, nonce: string, exp: number, chainId: number) =>
  createSiweMessage({
    domain: new URL(origin).host,
    uri: origin,
    address: getAddress(address),
    chainId,
    nonce,
    version: '1',
    issuedAt: new Date((exp - 300) * 1000),
    expirationTime: new Date(exp * 1000),
  });

export async function startSpecOperator(
  options: {
    tamperChallenge?: boolean /** The chain its sign-in message names (default 31337). */;
    chainId?: number;
  } = {},
): Promise<SpecOperator> {
  const challenges = new Map<string, string>();
  const runs = new Map<string, { sandbox: string; status: string; connections: number }>();
  const terminals = new Map<string, { res: ServerResponse | undefined; buffered: string[] }>();
  const state: Omit<SpecOperator, 'url' | 'close'> = {
    sandboxes: new Map(),
    tokens: new Map(),
    provisions: new Map(),
    log: [],
    runScript: { events: [] },
    cancelled: [],
    terminalInput: [],
    rateLimitSeconds: undefined,
    lastEventIds: [],
  };
  let counter = 0;
  const rid = () => `req-${(++counter).toString(16).padStart(8, '0')}`;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': rid() });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, code: string, message: string) =>
    send(res, status, { error: { code, message, request_id: `req-err-${counter}` } });

  const body = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    let text = '';
    for await (const c of req) text += c;
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    state.log.push(`${method} ${path}`);
    try {
      if (method === 'GET' && path === '/api/shapes') {
        return send(res, 200, {
          presets: [
            { name: 'small', cpuCores: 1, memoryMb: 1024, diskGb: 10, fits: true },
            { name: 'huge', cpuCores: 16, memoryMb: 65536, diskGb: 500, fits: false },
          ],
          default: 'small',
          ceiling: { cpuCores: 4, memoryMb: 8192, diskGb: 50 },
        });
      }
      if (method === 'POST' && path === '/api/auth/challenge') {
        const b = await body(req);
        if (typeof b.address !== 'string') return fail(res, 400, 'VALIDATION', 'send {"address":"0x…"}');
        const nonce = randomBytes(32).toString('hex');
        const exp = Math.floor(Date.now() / 1000) + 300;
        const message = options.tamperChallenge
          ? `Transfer all funds\nNonce: ${nonce}`
          : CHALLENGE(`http://${req.headers.host}`, b.address, nonce, exp, options.chainId ?? 31337);
        challenges.set(nonce, message);
        return send(res, 200, { nonce, message, expires_at: exp });
      }
      if (method === 'POST' && path === '/api/auth/session') {
        const b = await body(req);
        const message = challenges.get(String(b.nonce));
        challenges.delete(String(b.nonce));
        if (!message) return fail(res, 401, 'UNAUTHORIZED', 'unknown or used challenge');
        const address = (
          await recoverMessageAddress({ message, signature: b.signature as `0x${string}` })
        ).toLowerCase();
        const token = `v4.local.${randomBytes(24).toString('hex')}`;
        state.tokens.set(token, address);
        return send(res, 200, { token, address, expires_at: Math.floor(Date.now() / 1000) + 3600 });
      }
      const pm = /^\/api\/provisions\/(\d+)$/.exec(path);
      if (method === 'GET' && pm) {
        const p = state.provisions.get(pm[1]!);
        return p ? send(res, 200, p) : fail(res, 404, 'NOT_FOUND', 'no such provision');
      }
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const owner = token ? state.tokens.get(token) : undefined;
      if (!owner) return fail(res, 401, 'UNAUTHORIZED', 'missing or invalid session');
      if (state.rateLimitSeconds !== undefined) {
        res.setHeader('retry-after', String(state.rateLimitSeconds));
        return fail(res, 429, 'RATE_LIMITED', 'too many requests');
      }
      if (method === 'DELETE' && path === '/api/auth/session') {
        state.tokens.delete(token!);
        return send(res, 200, { revoked: true });
      }
      if (method === 'GET' && path === '/api/sandboxes') {
        return send(res, 200, {
          sandboxes: [...state.sandboxes.values()]
            .filter((s) => s.owner === owner)
            .map((s) => ({ id: s.id, state: s.state })),
        });
      }
      const m = /^\/api\/sandboxes\/([^/]+)(\/.*)?$/.exec(path);
      if (!m) return fail(res, 404, 'NOT_FOUND', 'no such route');
      const sb = state.sandboxes.get(decodeURIComponent(m[1]!));
      if (!sb) return fail(res, 404, 'SANDBOX_NOT_FOUND', 'sandbox not found');
      if (sb.owner !== owner) return fail(res, 403, 'FORBIDDEN', 'not your sandbox');
      const rest = m[2] ?? '';
      const running = () => {
        if (sb.state === 'running') return true;
        fail(res, 409, 'SANDBOX_STOPPED', 'sandbox is stopped');
        return false;
      };
      if (method === 'GET' && rest === '')
        return send(res, 200, {
          id: sb.id,
          state: sb.state,
          cpu_cores: 1,
          ...(sb.name ? { name: sb.name } : {}),
          ...(sb.timer_deadlines ? { timer_deadlines: sb.timer_deadlines } : {}),
        });
      if (method === 'POST' && rest === '/exec') {
        if (!running()) return;
        const b = await body(req);
        const code = /^exit (\d+)$/.exec(String(b.command));
        if (code) return send(res, 200, { exit_code: Number(code[1]), stdout: '', stderr: 'failed\n' });
        return send(res, 200, { exit_code: 0, stdout: `ran: ${String(b.command)}\n`, stderr: '' });
      }
      if (method === 'POST' && (rest === '/stop' || rest === '/resume')) {
        sb.state = rest === '/stop' ? 'stopped' : 'running';
        return send(res, 200, { success: true, sandbox_id: sb.id, state: sb.state });
      }
      if (rest === '/secrets') {
        if (method === 'POST') {
          sb.secrets = (await body(req)).env as Record<string, string>;
          return send(res, 200, { status: 'secrets_configured', sandbox_id: sb.id });
        }
        if (method === 'DELETE') {
          sb.secrets = {};
          return send(res, 200, { status: 'secrets_wiped' });
        }
        return send(res, 200, { keys: Object.keys(sb.secrets) });
      }
      if (method === 'POST' && rest === '/prompt') {
        if (!running()) return;
        if ([...runs.values()].some((r) => r.sandbox === sb.id && r.status === 'running')) {
          return fail(res, 409, 'CHAT_RUN_ACTIVE', 'a run is already active');
        }
        const runId = `run-${runs.size + 1}`;
        runs.set(runId, { sandbox: sb.id, status: 'running', connections: 0 });
        return send(res, 202, { run_id: runId, session_id: 'sess-1', status: 'queued' });
      }
      const rm = /^\/runs\/([^/]+)(\/events|\/cancel)?$/.exec(rest);
      if (rm) {
        const run = runs.get(rm[1]!);
        if (!run) return fail(res, 404, 'NOT_FOUND', 'no such run');
        if (method === 'GET' && !rm[2]) return send(res, 200, { run_id: rm[1], status: run.status });
        if (method === 'POST' && rm[2] === '/cancel') {
          run.status = 'cancelled';
          state.cancelled.push(rm[1]!);
          return send(res, 200, { cancelled: true });
        }
        const header = req.headers['last-event-id'];
        const last = typeof header === 'string' ? Number(header) : 0;
        state.lastEventIds.push(typeof header === 'string' ? header : undefined);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': rid() });
        const cut = run.connections++ === 0 ? state.runScript.cutAfter : undefined;
        let sent = 0;
        for (let i = last; i < state.runScript.events.length; i++) {
          if (cut !== undefined && sent === cut) {
            setTimeout(() => res.socket?.destroy(), 20);
            return;
          }
          const ev = state.runScript.events[i]!;
          res.write(`id: ${i + 1}\nevent: ${ev.event}\ndata: ${JSON.stringify(ev.data)}\n\n`);
          sent++;
        }
        if (run.status === 'running') {
          // Stay open like a live run until cancelled; finish when cancel arrives.
          if (state.runScript.events.length > 0) run.status = 'completed';
          else {
            const t = setInterval(() => {
              if (run.status !== 'running') {
                clearInterval(t);
                res.end();
              }
            }, 20);
            res.on('close', () => clearInterval(t));
            return;
          }
        }
        return res.end();
      }
      if (method === 'POST' && rest === '/terminals') {
        if (!running()) return;
        const tid = `term-${terminals.size + 1}`;
        terminals.set(tid, { res: undefined, buffered: ['$ '] });
        return send(res, 200, { success: true, sessionId: tid, data: { sessionId: tid, shell: 'bash' } });
      }
      const tm = /^\/terminals\/([^/]+)(\/stream|\/input)?$/.exec(rest);
      if (tm) {
        const term = terminals.get(tm[1]!);
        if (!term) return fail(res, 404, 'SESSION_NOT_FOUND', 'no such terminal');
        if (method === 'GET' && tm[2] === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          term.res = res;
          for (const t of term.buffered) {
            res.write(`data: ${JSON.stringify({ type: 'data.stdout', properties: { text: t } })}\n\n`);
          }
          return;
        }
        if (method === 'POST' && tm[2] === '/input') {
          const data = String((await body(req)).data);
          state.terminalInput.push(data);
          term.res?.write(`data: ${JSON.stringify({ type: 'data.stdout', properties: { text: data } })}\n\n`);
          if (data.includes('exit\r')) term.res?.end();
          return send(res, 200, { success: true });
        }
        if (method === 'PATCH') return send(res, 200, { success: true, ...(await body(req)) });
        if (method === 'DELETE') {
          terminals.delete(tm[1]!);
          term.res?.end();
          return send(res, 200, { deleted: true, sessionId: tm[1] });
        }
      }
      return fail(res, 404, 'NOT_FOUND', 'no such route');
    } catch (e) {
      return fail(res, 500, 'INTERNAL', (e as Error).message);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  // The same object the handlers read, so tests can change runScript etc. on the fly.
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}
