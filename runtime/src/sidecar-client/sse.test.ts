// SSE parsing across arbitrary chunk boundaries.
import { describe, expect, it } from 'vitest';
import { parseSse, type SseEvent } from './sse.ts';

async function* chunks(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function collect(text: string, size: number, max = 1 << 20): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of parseSse(chunks(text, size), max)) out.push(e);
  return out;
}

const STREAM =
  ': keep-alive\n\n' +
  'event: execution.started\ndata: {"sessionId":"s1"}\n\n' +
  'id: 7\r\ndata: line one\r\ndata: line two\r\n\r\n' +
  'data: {"type":"data.stdout","properties":{"text":"héllo ✓"}}\n\n' +
  'event: result\ndata:{"finalText":"done"}';

describe('parseSse', () => {
  it('parses named, unnamed, multi-line and id events at any chunk size, skipping comments', async () => {
    const expected: SseEvent[] = [
      { event: 'execution.started', data: '{"sessionId":"s1"}' },
      { id: '7', data: 'line one\nline two' },
      { data: '{"type":"data.stdout","properties":{"text":"héllo ✓"}}' },
      { event: 'result', data: '{"finalText":"done"}' },
    ];
    for (const size of [1, 2, 3, 7, 64, 10_000]) {
      expect(await collect(STREAM, size)).toEqual(expected);
    }
  });

  it('refuses an event larger than the bound', async () => {
    const big = `data: ${'x'.repeat(5000)}\n\n`;
    await expect(collect(big, 100, 1000)).rejects.toThrow(/exceeds 1000 bytes/);
    await expect(collect(`data: ${'y'.repeat(5000)}`, 100, 1000)).rejects.toThrow(/exceeds/);
  });
});
