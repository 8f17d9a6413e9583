// Follows JobSubmitted for one service: eth_getLogs in windows from a cursor, triggered by a timer
// (polling) or by new-head notifications over WebSocket, delivering events in (block, logIndex) order.
import type { Logger } from 'pino';
import { type Address, createPublicClient, type PublicClient, webSocket } from 'viem';
import { Backoff, sleep } from './backoff.ts';
import { fetchJobSubmitted, type JobSubmittedEvent } from './tangle-events.ts';

export interface JobProducerOptions {
  /** HTTP client used for every read (getLogs, head). */
  client: PublicClient;
  /** When set, new heads arrive by eth_subscribe and trigger a scan at once. */
  wsRpcUrl?: string | undefined;
  tangle: Address;
  serviceId: bigint;
  /** Polling period without WebSocket (default 1000 ms); with WebSocket, a safety scan runs every 4x this. */
  pollIntervalMs?: number;
  /** Most blocks per eth_getLogs (default 500); halved while the RPC answers "too many results". */
  windowBlocks?: number;
  /** Only deliver logs this many blocks below the head (default 0). */
  confirmations?: number;
  log: Logger;
}

/** Where the producer hands events: `deliver` may wait (backpressure); `scanned` marks a block range done. */
export interface JobSink {
  deliver(event: JobSubmittedEvent): Promise<void>;
  scanned(toBlock: bigint): void | Promise<void>;
}

const TOO_MANY = /too many|limit exceeded|range|more than|response size|query returned more/i;

export class JobProducer {
  readonly #o: Required<Omit<JobProducerOptions, 'wsRpcUrl'>> & { wsRpcUrl: string | undefined };
  #window: number;
  #wake: (() => void) | undefined;
  #latestHead: bigint | undefined;

  constructor(opts: JobProducerOptions) {
    this.#o = {
      pollIntervalMs: 1000,
      windowBlocks: 500,
      confirmations: 0,
      ...opts,
      wsRpcUrl: opts.wsRpcUrl,
    };
    this.#window = this.#o.windowBlocks;
  }

  /** Scans from `fromBlock` until `signal` aborts; RPC failures are logged and retried with backoff. */
  async run(fromBlock: bigint, sink: JobSink, signal: AbortSignal): Promise<void> {
    const { log } = this.#o;
    const stopWs = this.#o.wsRpcUrl ? this.#watchHeads(this.#o.wsRpcUrl, signal) : undefined;
    let next = fromBlock;
    const backoff = new Backoff();
    log.info(
      {
        fromBlock: `${fromBlock}`,
        mode: this.#o.wsRpcUrl ? 'websocket' : 'polling',
        pollIntervalMs: this.#o.pollIntervalMs,
      },
      'job producer started',
    );
    try {
      while (!signal.aborted) {
        try {
          next = await this.#scan(next, sink, signal);
          backoff.reset();
        } catch (err) {
          if (signal.aborted) break;
          const ms = backoff.next();
          log.warn(
            { err, retryInMs: ms, attempt: backoff.attempt, fromBlock: `${next}` },
            'job producer RPC error; retrying',
          );
          await sleep(ms, signal);
          continue;
        }
        await this.#waitForTrigger(signal);
      }
    } finally {
      stopWs?.();
      log.info({ nextBlock: `${next}` }, 'job producer stopped');
    }
  }

  /** Delivers everything from `from` to the confirmed head; returns the next block to scan. */
  async #scan(from: bigint, sink: JobSink, signal: AbortSignal): Promise<bigint> {
    const { client, tangle, serviceId, confirmations, log } = this.#o;
    const notified = this.#latestHead;
    this.#latestHead = undefined;
    const head = notified ?? (await client.getBlockNumber({ cacheTime: 0 }));
    const safe = head - BigInt(confirmations);
    let next = from;
    while (next <= safe && !signal.aborted) {
      const to = next + BigInt(this.#window) - 1n < safe ? next + BigInt(this.#window) - 1n : safe;
      let res: Awaited<ReturnType<typeof fetchJobSubmitted>>;
      try {
        res = await fetchJobSubmitted(client, tangle, serviceId, next, to);
      } catch (err) {
        if (this.#window > 1 && TOO_MANY.test(String((err as Error).message))) {
          this.#window = Math.max(1, Math.floor(this.#window / 2));
          log.warn({ window: this.#window }, 'eth_getLogs window too large for this RPC; halving it');
          continue;
        }
        throw err;
      }
      for (const bad of res.malformed)
        log.warn({ log: bad }, 'ignoring a JobSubmitted log that does not decode');
      for (const event of res.events) {
        if (signal.aborted) return next;
        await sink.deliver(event);
      }
      if (signal.aborted) return next;
      await sink.scanned(to);
      next = to + 1n;
      if (this.#window < this.#o.windowBlocks)
        this.#window = Math.min(this.#o.windowBlocks, this.#window * 2);
    }
    return next;
  }

  #waitForTrigger(signal: AbortSignal): Promise<void> {
    const ms = this.#o.wsRpcUrl ? this.#o.pollIntervalMs * 4 : this.#o.pollIntervalMs;
    if (this.#latestHead !== undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const inner = new AbortController();
      const done = () => {
        this.#wake = undefined;
        signal.removeEventListener('abort', done);
        inner.abort();
        resolve();
      };
      this.#wake = done;
      signal.addEventListener('abort', done, { once: true });
      sleep(ms, inner.signal).then(done);
    });
  }

  /**
   * Subscribes to new heads; each one wakes the scan loop, which then backfills from its cursor, so
   * a dropped connection loses nothing. A dead subscription is rebuilt with backoff.
   */
  #watchHeads(url: string, signal: AbortSignal): () => void {
    const { log } = this.#o;
    let unwatch: (() => void) | undefined;
    let closeSocket: (() => void) | undefined;
    const backoff = new Backoff(500, 15_000);
    const connect = () => {
      if (signal.aborted) return;
      const transport = webSocket(url, {
        reconnect: { attempts: 5, delay: 500 },
        keepAlive: { interval: 15_000 },
      });
      const ws = createPublicClient({ transport });
      closeSocket = () => {
        ws.transport
          .getRpcClient?.()
          .then((c: { close(): void }) => c.close())
          .catch(() => {});
      };
      unwatch = ws.watchBlockNumber({
        onBlockNumber: (n) => {
          backoff.reset();
          if (this.#latestHead === undefined || n > this.#latestHead) this.#latestHead = n;
          this.#wake?.();
        },
        onError: (err) => {
          if (signal.aborted) return;
          const ms = backoff.next();
          log.warn(
            { err, retryInMs: ms },
            'websocket head subscription failed; resubscribing (polling meanwhile)',
          );
          unwatch?.();
          closeSocket?.();
          setTimeout(connect, ms).unref();
          this.#wake?.();
        },
      });
    };
    connect();
    return () => {
      unwatch?.();
      closeSocket?.();
    };
  }
}
