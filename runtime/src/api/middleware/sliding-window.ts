// A sliding-window rate limiter (the "sliding window counter" form): per key, the count of the
// current fixed window and of the previous one, the previous weighted by how much of it still
// overlaps the sliding window. O(1) time and memory per key whatever the limit.

export interface RateDecision {
  allowed: boolean;
  /** When refused: milliseconds until a request would be admitted. */
  retryAfterMs: number;
  remaining: number;
}

interface Window {
  /** Start of the current fixed window. */
  start: number;
  prev: number;
  curr: number;
}

export class SlidingWindowLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    /** Bound on tracked keys: the least recently seen are dropped first. */
    private readonly maxKeys = 100_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  hit(key: string): RateDecision {
    const t = this.now();
    const W = this.windowMs;
    let w = this.windows.get(key);
    if (w === undefined) {
      if (this.windows.size >= this.maxKeys) this.evict();
      w = { start: t, prev: 0, curr: 0 };
    } else {
      // Re-insert so Map order is least recently seen first (for eviction).
      this.windows.delete(key);
    }
    this.windows.set(key, w);
    const k = Math.floor((t - w.start) / W);
    if (k >= 1) {
      w.prev = k === 1 ? w.curr : 0;
      w.curr = 0;
      w.start += k * W;
    }
    const e = t - w.start;
    const estimate = w.prev * (1 - e / W) + w.curr;
    if (estimate + 1 <= this.limit) {
      w.curr++;
      return { allowed: true, retryAfterMs: 0, remaining: Math.floor(this.limit - estimate - 1) };
    }
    let wait: number;
    if (w.curr + 1 > this.limit) {
      // Only the next window can admit it, once this window's weight has decayed enough.
      wait = W - e + W * (1 - (this.limit - 1) / w.curr);
    } else {
      wait = W * (1 - (this.limit - 1 - w.curr) / w.prev) - e;
    }
    return { allowed: false, retryAfterMs: Math.max(1, Math.ceil(wait)), remaining: 0 };
  }

  /** Drops keys idle for two windows (called periodically). */
  sweep(): void {
    const t = this.now();
    for (const [k, w] of this.windows) if (t - w.start >= 2 * this.windowMs) this.windows.delete(k);
  }

  private evict(): void {
    this.sweep();
    let drop = Math.ceil(this.maxKeys / 10);
    for (const k of this.windows.keys()) {
      if (this.windows.size < this.maxKeys && drop <= 0) break;
      this.windows.delete(k);
      drop--;
    }
  }

  get size(): number {
    return this.windows.size;
  }
}
