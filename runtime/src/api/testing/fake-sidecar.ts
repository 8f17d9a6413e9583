// Test fixture: a real local HTTP server speaking the sidecar contract (token auth, exec, agent
// stream, cancel, terminals with an SSE stream), with switches to make it slow, hang or fail.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeSidecarBehaviour {
  /** Exec never answers. */
  hang: boolean;
  /** Delay before a cancel takes effect and is answered (ms). */
  cancelDelayMs?: number;
  /** Delay between agent stream events (ms). */
  eventDelayMs: number;
  /** Number of message.part.updated events before the result. */
  parts: number;
  /** Agent stream emits an `error` event instead of a result. */
  agentFails: boolean;
  /** Respond 500 to everything but /health. */
  broken: boolean;
}

export interface FakeSidecar {
  url: string;
  /** Bearer tokens it accepts (one per sandbox that points at it). */
  tokens: Set<string>;
  behaviour: FakeSidecarBehaviour;
  /** Request ids and paths seen (to check forwarding). */
  seen: Array<{ method: string; path: string; requestId: string | undefined; auth: string | undefined }>;
  /** Env each exec received. */
  execEnvs: Array<Record<string, string> | undefined>;
  cancels: number;
  /** Pushes text to every open terminal stream. */
  writeTerminal(text: string): void;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startFakeSidecar(): Promise<FakeSidecar> {
  const tokens = new Set<string>();
  const behaviour: FakeSidecarBehaviour = {
    hang: false,
    eventDelayMs: 5,
    parts: 3,
    agentFails: false,
    broken: false,
  };
  const seen: FakeSidecar['seen'] = [];
  const execEnvs: FakeSidecar['execEnvs'] = [];
  const terminals = new Map<string, { streams: Set<ServerResponse> }>();
  let termSeq = 0;
  let activeAbort: (() => void) | undefined;
  const state = { cancels: 0 };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    seen.push({
      method: req.method ?? '',
      path,
      requestId: req.headers['x-request-id'] as string | undefined,
      auth: req.headers.authorization,
    });
    if (path === '/health') return send(res, 200, { status: 'ok', timestamp: Date.now() });
    const auth = req.headers.authorization;
    if (!auth)
      return send(res, 401, { success: false, error: { code: 'UNAUTHORIZED', message: 'missing token' } });
    if (!auth.startsWith('Bearer ') || !tokens.has(auth.slice(7))) {
      return send(res, 403, { success: false, error: { code: 'FORBIDDEN', message: 'wrong token' } });
    }
    if (behaviour.broken)
      return send(res, 500, { success: false, error: { code: 'INTERNAL', message: 'boom' } });

    if (req.method === 'POST' && path === '/terminals/commands') {
      const body = await readJson(req);
      if (behaviour.hang) return; // never answers
      if (typeof body.command !== 'string') {
        return send(res, 400, {
          success: false,
          error: { code: 'INVALID_COMMAND', message: 'command required' },
        });
      }
      execEnvs.push(body.env as Record<string, string> | undefined);
      const m = /^echo (.*)$/.exec(body.command);
      const result = m
        ? { exitCode: 0, stdout: `${m[1]}\n`, stderr: '', duration: 1 }
        : /^exit (\d+)$/.test(body.command)
          ? { exitCode: Number(body.command.slice(5)), stdout: '', stderr: 'failed\n', duration: 1 }
          : { exitCode: 0, stdout: `ran: ${body.command}\n`, stderr: '', duration: 1 };
      return send(res, 200, { success: true, result, ...result });
    }

    if (req.method === 'POST' && path === '/agents/run/stream') {
      const body = await readJson(req);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let aborted = false;
      activeAbort = () => {
        aborted = true;
      };
      res.on('close', () => {
        aborted = true;
      });
      const write = (event: string, data: unknown) =>
        res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      const sessionId = (body.sessionId as string | undefined) ?? 'fake-session';
      write('execution.started', { sessionId });
      let text = '';
      for (let i = 0; i < behaviour.parts; i++) {
        await new Promise((r) => setTimeout(r, behaviour.eventDelayMs));
        if (aborted) return res.end();
        text += `part${i} `;
        write('message.part.updated', { part: { id: 'p1', type: 'text', text, content: text } });
      }
      if (behaviour.agentFails) write('error', { code: 'AGENT_EXECUTION_FAILED', message: 'agent crashed' });
      else {
        write('result', {
          finalText: `echo: ${body.message}`,
          response: `echo: ${body.message}`,
          metadata: { sessionId, traceId: 't1', harness: 'codex', model: 'm1' },
          usage: { inputTokens: 3, outputTokens: 5 },
          timing: { totalMs: 10 },
        });
      }
      activeAbort = undefined;
      return res.end();
    }

    if (req.method === 'POST' && path === '/agents/run/cancel') {
      if (behaviour.cancelDelayMs) await new Promise((r) => setTimeout(r, behaviour.cancelDelayMs));
      state.cancels++;
      activeAbort?.();
      return send(res, 200, { success: true });
    }

    if (path === '/terminals' && req.method === 'POST') {
      const body = await readJson(req);
      const id = `term${++termSeq}`;
      terminals.set(id, { streams: new Set() });
      const data = {
        sessionId: id,
        shell: '/bin/bash',
        cwd: body.cwd ?? '/home/agent',
        cols: body.cols ?? 80,
        rows: body.rows ?? 24,
        streamUrl: `/terminals/${id}/stream`,
      };
      return send(res, 200, { success: true, sessionId: id, data });
    }
    if (path === '/terminals' && req.method === 'GET') {
      return send(res, 200, {
        success: true,
        data: [...terminals.keys()].map((sessionId) => ({ sessionId })),
      });
    }
    const tm = /^\/terminals\/([^/]+)(\/stream|\/input)?$/.exec(path);
    if (tm) {
      const t = terminals.get(tm[1]!);
      if (!t)
        return send(res, 404, {
          success: false,
          error: { code: 'SESSION_NOT_FOUND', message: 'no such terminal' },
        });
      if (tm[2] === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': connected\n\n');
        t.streams.add(res);
        res.on('close', () => t.streams.delete(res));
        return;
      }
      if (tm[2] === '/input') {
        const body = await readJson(req);
        for (const s of t.streams) {
          s.write(
            `data: ${JSON.stringify({ type: 'data.stdout', properties: { text: String(body.data) } })}\n\n`,
          );
        }
        return send(res, 200, { success: true });
      }
      if (req.method === 'PATCH')
        return send(res, 200, { success: true, data: { sessionId: tm[1], ...(await readJson(req)) } });
      if (req.method === 'DELETE') {
        for (const s of t.streams) s.end();
        terminals.delete(tm[1]!);
        return send(res, 200, { deleted: true, sessionId: tm[1] });
      }
      return send(res, 200, { success: true, data: { sessionId: tm[1] } });
    }
    send(res, 404, { success: false, error: { code: 'NOT_FOUND', message: 'no route' } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tokens,
    behaviour,
    seen,
    execEnvs,
    get cancels() {
      return state.cancels;
    },
    writeTerminal(text: string) {
      for (const t of terminals.values()) {
        for (const s of t.streams)
          s.write(`data: ${JSON.stringify({ type: 'data.stdout', properties: { text } })}\n\n`);
      }
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
