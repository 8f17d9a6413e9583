// SSE parser rules and the reconnecting reader, against a real node:http server on loopback.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isClientError } from './errors.ts';
import { readSse, SseParser } from './sse.ts';

describe('SseParser', () => {
  it('parses events, multi-line data, ids, comments and retry', () => {
    const p = new SseParser();
    const evs = p.push(
      ': keep-alive\nid: 1\nevent: result\ndata: {"a":1}\ndata: x\nretry: 250\n\ndata:no-space\n\n',
    );
    expect(evs).toEqual([
      { id: '1', event: 'result', data: '{"a":1}\nx', retry: 250 },
      { id: '1', event: 'message', data: 'no-space' },
    ]);
  });

  it('accepts CRLF and CR line ends, even when a CRLF is split across chunks', () => {
    const p = new SseParser();
    expect(p.push('data: a\r')).toEqual([]);
    expect(p.push('\n\r\ndata: b\r\r')).toEqual([
      { id: undefined, event: 'message', data: 'a' },
      { id: undefined, event: 'message', data: 'b' },
    ]);
  });

  it('does not dispatch an event without data, but keeps its id', () => {
    const p = new SseParser();
    expect(p.push('id: 7\n\n')).toEqual([]);
    expect(p.lastEventId).toBe('7');
    expect(p.push('data: z\n\n')[0]?.id).toBe('7');
  });

  it('discards an unterminated event at the end of the stream', () => {
    const p = new SseParser();
    expect(p.push('data: half')).toEqual([]);
    p.end();
    expect(p.push('\n\n')).toEqual([]);
  });

  it('gives the same events however the stream is split into chunks', () => {
    const stream =
      'id: 1\nevent: a\ndata: one\n\n: c\r\nid: 2\r\ndata: two\r\ndata: 2b\r\n\r\ndata: three\r\r';
    const whole = new SseParser().push(stream);
    fc.assert(
      fc.property(fc.array(fc.nat(stream.length), { maxLength: 8 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const p = new SseParser();
        const got = [];
        let prev = 0;
        for (const c of [...points, stream.length]) {
          got.push(...p.push(stream.slice(prev, c)));
          prev = c;
        }
        expect(got).toEqual(whole);
      }),
    );
  });
});

interface EventServer {
  url: string;
  seenLastEventIds: Array<string | undefined>;
  close: () => Promise<void>;
}

/** Serves events 1..total; a connection is cut after `perConnection` events. */
async function startEventServer(opts: {
  total: number;
  perConnection: number;
  /** When true the server ignores Last-Event-ID and replays from 1 (a misbehaving server). */
  ignoreLastId?: boolean;
  /** End the final connection cleanly instead of cutting it. */
  status?: number;
}): Promise<EventServer> {
  const seen: Array<string | undefined> = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers['last-event-id'];
    const last = typeof header === 'string' ? header : undefined;
    seen.push(last);
    if (opts.status) {
      res.writeHead(opts.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such run', request_id: 'req-1' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const from = opts.ignoreLastId || last === undefined ? 1 : Number(last) + 1;
    let sent = 0;
    for (let id = from; id <= opts.total; id++) {
      if (sent === opts.perConnection) {
        // Flush what was written, then cut the TCP connection mid-stream.
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.write(`id: ${id}\nevent: tick\ndata: {"n":${id}}\n\n`);
      sent++;
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    seenLastEventIds: seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('readSse against a real HTTP server', () => {
  let server: EventServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('reconnects with Last-Event-ID and resumes without repeats or gaps', async () => {
    server = await startEventServer({ total: 7, perConnection: 3 });
    const ids: string[] = [];
    for await (const ev of readSse(server.url, { headers: () => ({}), retryMs: 10 })) ids.push(ev.id ?? '');
    expect(ids).toEqual(['1', '2', '3', '4', '5', '6', '7']);
    expect(server.seenLastEventIds).toEqual([undefined, '3', '6']);
  });

  it('starts after a given Last-Event-ID', async () => {
    server = await startEventServer({ total: 5, perConnection: 10 });
    const ids: string[] = [];
    for await (const ev of readSse(server.url, { headers: () => ({}), lastEventId: '3' }))
      ids.push(ev.id ?? '');
    expect(ids).toEqual(['4', '5']);
    expect(server.seenLastEventIds).toEqual(['3']);
  });

  it('drops replayed events when a server ignores Last-Event-ID', async () => {
    server = await startEventServer({ total: 5, perConnection: 2, ignoreLastId: true });
    const ids: string[] = [];
    // This server can never get past event 2, so the reader gives up with a clear error.
    await expect(
      (async () => {
        for await (const ev of readSse(server!.url, { headers: () => ({}), retryMs: 5, maxRetries: 3 }))
          ids.push(ev.id ?? '');
      })(),
    ).rejects.toSatisfy((e) => isClientError(e, 'NETWORK'));
    expect(ids).toEqual(['1', '2']);
  });

  it('reconnects after a clean end only while onEnd says the stream is not finished', async () => {
    server = await startEventServer({ total: 4, perConnection: 10 });
    let ends = 0;
    const ids: string[] = [];
    for await (const ev of readSse(server.url, {
      headers: () => ({}),
      retryMs: 5,
      onEnd: () => ++ends < 2,
    }))
      ids.push(ev.id ?? '');
    expect(ids).toEqual(['1', '2', '3', '4']);
    expect(server.seenLastEventIds).toEqual([undefined, '4']);
  });

  it('turns an HTTP error into the error onHttpError returns', async () => {
    server = await startEventServer({ total: 1, perConnection: 1, status: 404 });
    const it = readSse(server.url, { headers: () => ({}) });
    await expect(it.next()).rejects.toSatisfy((e) => isClientError(e) && e.status === 404);
  });

  it('stops and closes the connection when the consumer breaks out', async () => {
    server = await startEventServer({ total: 100, perConnection: 100 });
    const ids: string[] = [];
    for await (const ev of readSse(server.url, { headers: () => ({}) })) {
      ids.push(ev.id ?? '');
      if (ids.length === 2) break;
    }
    expect(ids).toEqual(['1', '2']);
    expect(server.seenLastEventIds).toHaveLength(1);
  });

  it('ends quietly when aborted', async () => {
    server = await startEventServer({ total: 3, perConnection: 1 });
    const ac = new AbortController();
    const ids: string[] = [];
    for await (const ev of readSse(server.url, { headers: () => ({}), retryMs: 1000, signal: ac.signal })) {
      ids.push(ev.id ?? '');
      ac.abort();
    }
    expect(ids).toEqual(['1']);
  });
});
