// SSE framing: named and unnamed frames, multi-line data, keep-alive comments, close.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSse } from './sse.ts';

const server = createServer((_req, res) => {
  const sse = openSse(res, 40);
  sse.send('{"a":1}', 'result');
  sse.send('line1\nline2');
  setTimeout(() => sse.close(), 130);
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('openSse', () => {
  it('writes event frames, splits multi-line data, and sends keep-alive comments', async () => {
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).toContain('event: result\ndata: {"a":1}\n\n');
    expect(text).toContain('data: line1\ndata: line2\n\n');
    expect(text).toContain(': keep-alive\n\n');
  });
});
