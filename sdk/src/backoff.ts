// Retry timing shared by the producer and consumer: abortable sleeps and capped exponential backoff.

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Capped exponential backoff with jitter: 250 ms, 500 ms, ... up to `maxMs`. */
export class Backoff {
  #attempt = 0;
  constructor(
    readonly baseMs = 250,
    readonly maxMs = 30_000,
  ) {}

  get attempt(): number {
    return this.#attempt;
  }

  next(): number {
    const ms = Math.min(this.maxMs, this.baseMs * 2 ** this.#attempt);
    this.#attempt++;
    return Math.round(ms * (0.75 + Math.random() * 0.5));
  }

  reset(): void {
    this.#attempt = 0;
  }
}
