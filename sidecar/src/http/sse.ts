// Server-sent events on a raw node:http response: named or unnamed frames, keep-alive comments, disconnect detection.
import type { ServerResponse } from 'node:http';

const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

export interface SseStream {
  /** Sends one frame; multi-line data becomes several `data:` lines, as SSE requires. */
  send(data: string, event?: string): void;
  close(): void;
  readonly closed: boolean;
  onClose(fn: () => void): void;
}

export function openSse(res: ServerResponse, keepAliveMs: number): SseStream {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': connected\n\n');
  let closed = false;
  const listeners: Array<() => void> = [];
  const timer = setInterval(() => {
    if (!closed) res.write(': keep-alive\n\n');
  }, keepAliveMs);
  timer.unref();
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    for (const fn of listeners.splice(0)) fn();
  };
  res.on('close', finish);
  const stream: SseStream = {
    send(data, event) {
      if (closed) return;
      let frame = event ? `event: ${event}\n` : '';
      for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
      res.write(`${frame}\n`);
      // A client that cannot keep up would make us buffer without bound: drop it (it can reconnect;
      // terminals replay their scrollback).
      if (res.writableLength > MAX_BUFFERED_BYTES) stream.close();
    },
    close() {
      if (closed) return;
      finish();
      res.end();
    },
    get closed() {
      return closed;
    },
    onClose(fn) {
      if (closed) fn();
      else listeners.push(fn);
    },
  };
  return stream;
}
