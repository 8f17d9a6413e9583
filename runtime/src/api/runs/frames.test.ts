// boundFrames: a frame over 1 MiB is split (text deltas, losslessly, never inside a code point)
// or truncated with a marker (everything else); usage: counts are read strictly and step totals
// are cumulative, each step counted once.
import { describe, expect, it } from 'vitest';
import { boundFrames, MAX_FRAME_BYTES } from './frames.ts';
import { readUsage, StepUsage } from './usage.ts';

const frameBytes = (event: string, data: unknown) =>
  Buffer.byteLength(`id: run-${'0'.repeat(24)}:1234567\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);

describe('boundFrames', () => {
  it('passes a small frame through unchanged', () => {
    const data = { part: { id: 'p', type: 'text', text: 'hi', content: 'hi' }, delta: true };
    expect(boundFrames('message.part.updated', data)).toEqual([{ event: 'message.part.updated', data }]);
  });

  it('splits a big text delta into frames within the bound whose texts add up to the original', () => {
    // Emoji (surrogate pairs, 4 bytes), escapes (2 bytes), control characters and lone surrogates
    // (6 bytes), two-byte letters.
    const text = '😀"\n\u0001a\ud800é'.repeat(100_000);
    const data = { part: { id: 'p', type: 'text', text, content: text, state: 'completed' }, delta: true };
    const frames = boundFrames('message.part.updated', data);
    expect(frames.length).toBeGreaterThan(1);
    for (const f of frames) expect(frameBytes(f.event, f.data)).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    const parts = frames.map((f) => (f.data as typeof data).part);
    expect(parts.map((p) => p.text).join('')).toBe(text);
    for (const p of parts) expect(p.content).toBe(p.text);
    expect(parts.map((p) => p.state)).toEqual([...parts.slice(1).map(() => 'running'), 'completed']);
  });

  it('truncates any other big frame, longest strings first, and says so', () => {
    const data = {
      finalText: 'x'.repeat(1_200_000),
      response: 'y'.repeat(1_100_000),
      metadata: { sessionId: 's' },
    };
    const [f, ...rest] = boundFrames('result', data);
    expect(rest).toEqual([]);
    expect(frameBytes(f!.event, f!.data)).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    const d = f!.data as typeof data & { truncated: { fields: string[]; original_bytes: number } };
    expect(d.truncated.fields.sort()).toEqual(['finalText', 'response']);
    expect(d.truncated.original_bytes).toBe(Buffer.byteLength(JSON.stringify(data)));
    expect(d.metadata).toEqual({ sessionId: 's' });
    expect(d.finalText).toBe('');
    expect(data.response.startsWith(d.response)).toBe(true);
    expect(d.response.length).toBeGreaterThan(1_000_000);
  });

  it('a frame strings cannot shrink keeps only the marker', () => {
    const [f] = boundFrames('message', { items: Array.from({ length: 200_000 }, (_, i) => i) });
    expect((f!.data as { truncated: { fields: string[] } }).truncated.fields).toEqual(['*']);
  });
});

describe('usage', () => {
  it('reads valid counts and refuses what breaks the convention (absent, not repaired)', () => {
    expect(
      readUsage({ inputTokens: 10, outputTokens: 4, cachedInputTokens: 6, reasoningTokens: 1, x: 1 }),
    ).toEqual({ inputTokens: 10, outputTokens: 4, cachedInputTokens: 6, reasoningTokens: 1 });
    expect(readUsage({ inputTokens: 3, outputTokens: 5 })).toEqual({ inputTokens: 3, outputTokens: 5 });
    expect(readUsage({ inputTokens: 3, outputTokens: 5, cachedInputTokens: 4 })).toBeNull();
    expect(readUsage({ inputTokens: 3, outputTokens: 5, reasoningTokens: 6 })).toBeNull();
    expect(readUsage({ inputTokens: -1, outputTokens: 5 })).toBeNull();
    expect(readUsage({ inputTokens: 1.5, outputTokens: 5 })).toBeNull();
    expect(readUsage({ outputTokens: 5 })).toBeNull();
    expect(readUsage(undefined)).toBeNull();
  });

  it('step frames carry a running total, each step counted once by part id; after a bad step, none', () => {
    const s = new StepUsage();
    expect(s.add({ id: 't', type: 'text', text: 'x' })).toBeUndefined();
    expect(s.add({ id: 'a', usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4 } })).toEqual({
      inputTokens: 10,
      outputTokens: 2,
      cachedInputTokens: 4,
    });
    const again = { id: 'a', usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4 } };
    expect(s.add(again)).toEqual({ inputTokens: 10, outputTokens: 2, cachedInputTokens: 4 });
    expect(s.add({ id: 'b', usage: { inputTokens: 5, outputTokens: 3, reasoningTokens: 1 } })).toEqual({
      inputTokens: 15,
      outputTokens: 5,
      cachedInputTokens: 4,
      reasoningTokens: 1,
    });
    expect(s.add({ id: 'c', usage: { inputTokens: 'many' } })).toBeUndefined();
    expect(s.add({ id: 'd', usage: { inputTokens: 1, outputTokens: 1 } })).toBeUndefined();
  });
});
