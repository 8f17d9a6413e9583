// The record of calls this operator already answered (or deliberately skipped), so a redelivered
// JobSubmitted event gets the same answer and never a second piece of work.
import type { StoreCollection } from '@agent-sandbox/runtime';

export interface HandledCall {
  job: number;
  outcome: 'skip' | 'result';
  /** The handler's value (for 'result'): plain JSON, re-encoded on a redelivery. */
  value?: Record<string, string>;
  /** Why it was skipped or failed (public text). */
  reason?: string;
  /** The call's log block (absent in older records): a reorg may give the id to another call. */
  blockHash?: string;
  at: number;
}

export class HandledCalls {
  readonly #coll: StoreCollection<HandledCall>;

  constructor(store: { collection<T>(name: string): StoreCollection<T> }) {
    this.#coll = store.collection<HandledCall>('handled-calls');
  }

  static key(serviceId: bigint | string, callId: bigint | string): string {
    return `${serviceId}:${callId}`;
  }

  /** The record of this call; with `blockHash`, one made for the same id on another fork is not it. */
  async get(serviceId: bigint, callId: bigint, blockHash?: string): Promise<HandledCall | undefined> {
    const h = await this.#coll.get(HandledCalls.key(serviceId, callId));
    if (h && blockHash && h.blockHash && h.blockHash.toLowerCase() !== blockHash.toLowerCase())
      return undefined;
    return h;
  }

  /** The record of a call on another fork than `blockHash` (a reorg removed it), if any. */
  async otherFork(serviceId: bigint, callId: bigint, blockHash: string): Promise<HandledCall | undefined> {
    const h = await this.#coll.get(HandledCalls.key(serviceId, callId));
    return h?.blockHash && h.blockHash.toLowerCase() !== blockHash.toLowerCase() ? h : undefined;
  }

  forget(serviceId: bigint, callId: bigint): Promise<void> {
    return this.#coll.del(HandledCalls.key(serviceId, callId));
  }

  async record(serviceId: bigint, callId: bigint, h: Omit<HandledCall, 'at'>): Promise<void> {
    await this.#coll.put(HandledCalls.key(serviceId, callId), { ...h, at: Date.now() });
  }

  /** Failed creates of a service (their reason answers GET /api/provisions/{callId}). */
  async failedCreate(serviceId: bigint | string, callId: bigint | string): Promise<HandledCall | undefined> {
    const h = await this.#coll.get(HandledCalls.key(serviceId, callId));
    return h && h.job === 0 && h.outcome === 'result' && h.value?.['sandboxId'] === '' ? h : undefined;
  }
}
