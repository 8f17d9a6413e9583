import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from './sliding-window.ts';

describe('SlidingWindowLimiter', () => {
  it('admits up to the limit in a fresh window, then refuses with a positive retry delay', () => {
    let now = 0;
    const l = new SlidingWindowLimiter(3, 1000, 100, () => now);
    expect([1, 2, 3].map(() => l.hit('a').allowed)).toEqual([true, true, true]);
    now = 400;
    const d = l.hit('a');
    expect(d.allowed).toBe(false);
    expect(d.retryAfterMs).toBeGreaterThan(0);
    expect(l.hit('b').allowed).toBe(true); // keys are independent
    now += d.retryAfterMs;
    expect(l.hit('a').allowed).toBe(true); // the delay it gave was enough
  });

  it('slides: right after a window boundary the previous window still counts', () => {
    let now = 0;
    const l = new SlidingWindowLimiter(10, 1000, 100, () => now);
    for (let i = 0; i < 10; i++) l.hit('k');
    now = 1100; // 90% of the previous window still overlaps: ~9 requests counted
    expect(l.hit('k').allowed).toBe(true);
    expect(l.hit('k').allowed).toBe(false);
    now = 2500; // previous window fully gone
    expect(l.hit('k').allowed).toBe(true);
  });

  it('refused requests do not consume capacity', () => {
    let now = 0;
    const l = new SlidingWindowLimiter(1, 1000, 100, () => now);
    l.hit('k');
    for (let i = 0; i < 10; i++) {
      now += 50;
      l.hit('k');
    }
    now = 2000;
    expect(l.hit('k').allowed).toBe(true);
  });

  it('never admits more than twice the limit within any sliding window (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 300 }),
        (limit, gaps) => {
          let now = 0;
          const W = 1000;
          const l = new SlidingWindowLimiter(limit, W, 10, () => now);
          const admitted: number[] = [];
          for (const g of gaps) {
            now += g;
            if (l.hit('k').allowed) admitted.push(now);
          }
          // The counter form weights the previous window uniformly, so a burst at its very end can
          // let through up to 2×limit in one sliding window; never more.
          for (let i = 0; i < admitted.length; i++) {
            const inWindow = admitted.filter((t) => t >= admitted[i]! && t < admitted[i]! + W).length;
            expect(inWindow).toBeLessThanOrEqual(2 * limit);
          }
        },
      ),
    );
  });

  it('bounds the number of tracked keys and sweeps idle ones', () => {
    let now = 0;
    const l = new SlidingWindowLimiter(5, 1000, 50, () => now);
    for (let i = 0; i < 500; i++) l.hit(`ip${i}`);
    expect(l.size).toBeLessThanOrEqual(50);
    now = 5000;
    l.sweep();
    expect(l.size).toBe(0);
  });
});
