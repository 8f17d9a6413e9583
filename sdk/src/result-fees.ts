// Fees for result transactions: the node's estimate (cached briefly), raised above the base fee
// when a tx was found stuck under it, and 12.5% over the last tx signed at the same nonce, so a
// replacement outbids its predecessor (nodes require at least +10% on both fields).
import type { PublicClient } from 'viem';

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

const bump = (x: bigint) => (x * 9n) / 8n + 1n;
const max = (a: bigint, b: bigint) => (a > b ? a : b);

export class ResultFees {
  #estimate: (Fees & { at: number }) | undefined;
  /** A prefetch of the node's estimate in flight (settles, never rejects). */
  #reading: Promise<void> | undefined;
  #generation = 0;
  readonly #atNonce = new Map<number, Fees>();

  constructor(private readonly client: PublicClient) {}

  /** Forgets the cached estimate (the node refused a fee). */
  refresh(): void {
    this.#estimate = undefined;
    this.#reading = undefined;
    this.#generation++;
  }

  /** Fees already used at `nonce` (a tx there may still sit in a mempool). */
  note(nonce: number, fees: Fees): void {
    this.#atNonce.set(nonce, fees);
    for (const n of this.#atNonce.keys()) if (n < nonce - 64) this.#atNonce.delete(n);
  }

  /**
   * Starts reading the node's estimate when the cached one is stale (none is in flight already),
   * so that a send shortly after does not wait for it; a failed read is left to `forNonce`.
   */
  prefetch(retry: <T>(fn: () => Promise<T>) => Promise<T>): void {
    if (this.#fresh() || this.#reading) return;
    const generation = this.#generation;
    const reading: Promise<void> = retry(() => this.client.estimateFeesPerGas())
      .then(
        (f) => {
          // A refresh() meanwhile (the node refused a fee) wants a read that starts after it.
          if (generation !== this.#generation) return;
          this.#estimate = {
            maxFeePerGas: f.maxFeePerGas,
            maxPriorityFeePerGas: f.maxPriorityFeePerGas,
            at: Date.now(),
          };
        },
        () => {},
      )
      .finally(() => {
        if (this.#reading === reading) this.#reading = undefined;
      });
    this.#reading = reading;
  }

  #fresh(): boolean {
    return this.#estimate !== undefined && Date.now() - this.#estimate.at <= 10_000;
  }

  /** Fees for a tx at `nonce`; `retry` wraps the node's estimate (transient failures). */
  async forNonce(
    nonce: number,
    retry: <T>(fn: () => Promise<T>) => Promise<T>,
    baseFee?: bigint,
  ): Promise<Fees> {
    if (!this.#fresh() && this.#reading) await this.#reading;
    if (!this.#estimate || Date.now() - this.#estimate.at > 10_000) {
      const f = await retry(() => this.client.estimateFeesPerGas());
      this.#estimate = {
        maxFeePerGas: f.maxFeePerGas,
        maxPriorityFeePerGas: f.maxPriorityFeePerGas,
        at: Date.now(),
      };
    }
    let tip = this.#estimate.maxPriorityFeePerGas;
    let fee = this.#estimate.maxFeePerGas;
    if (baseFee !== undefined) fee = max(fee, 2n * baseFee + tip);
    const prior = this.#atNonce.get(nonce);
    if (prior) {
      tip = max(tip, bump(prior.maxPriorityFeePerGas));
      fee = max(fee, bump(prior.maxFeePerGas));
    }
    const fees = { maxFeePerGas: max(fee, tip), maxPriorityFeePerGas: tip };
    this.note(nonce, fees);
    return fees;
  }
}
