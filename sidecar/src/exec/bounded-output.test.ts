// BoundedOutput keeps at most `limit` bytes and says how many it dropped.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedOutput } from './bounded-output.ts';

describe('BoundedOutput', () => {
  it('keeps everything under the limit', () => {
    const b = new BoundedOutput(10);
    b.push(Buffer.from('hello'));
    expect(b.text()).toBe('hello');
    expect(b.truncated).toBe(false);
  });

  it('never keeps more than the limit and counts the rest', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 50 })),
        fc.integer({ min: 1, max: 100 }),
        (chunks, limit) => {
          const b = new BoundedOutput(limit);
          for (const c of chunks) b.push(Buffer.from(c));
          const total = chunks.reduce((n, c) => n + c.length, 0);
          const text = b.text();
          if (total <= limit) expect(b.truncated).toBe(false);
          else expect(text).toContain(`[output truncated: ${total - limit} more bytes not shown]`);
          // Valid UTF-8 round trip: JSON can always carry it.
          expect(() => JSON.parse(JSON.stringify(text))).not.toThrow();
        },
      ),
    );
  });
});
