// In-process per-key mutex: operations on one key run one after another, other keys run freely.

export class KeyLock {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier `run` on the same key has settled (success or failure). */
  async run<R>(key: string, fn: () => Promise<R>): Promise<R> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The chain only ever resolves, so one failed operation never poisons the key.
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    try {
      await prev;
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with queued or running work (for tests and diagnostics). */
  get size(): number {
    return this.#tails.size;
  }
}
