// Follows JobSubmitted for one service: eth_getLogs in windows from a cursor, triggered by a timer
// (polling) or by new-head notifications over WebSocket, delivering events in (block, logIndex) order.
import type { Logger } from 'pino';
import type { Address, Hex, PublicClient } from 'viem';
import { numberToHex, webSocket } from 'viem';
import { Backoff, sleep } from './backoff.ts';
import { SdkError } from './errors.ts';
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
  /** Told after each scan whether the RPC answered (an error: it failed or was unreachable). */
  onRpcState?: (error: unknown | undefined) => void;
}

/** Where the producer hands events: `deliver` may wait (backpressure); `scanned` marks a block range done. */
export interface JobSink {
  deliver(event: JobSubmittedEvent): Promise<void>;
  /** `blockHash` is the hash of `toBlock` on the chain the logs came from. */
  scanned(toBlock: bigint, blockHash: Hex): void | Promise<void>;
  /** Scanned blocks with the hash each had, newest first (to notice a reorg under them). */
  recentBlocks?(): Array<{ block: bigint; hash: Hex }>;
  /** The chain forked after block `fork` (its newest block still ours): returns where to scan next. */
  reorg?(fork: bigint): Promise<bigint>;
}

const TOO_MANY = /too many|limit exceeded|range|more than|response size|query returned more/i;

export class JobProducer {
  readonly #o: Required<Omit<JobProducerOptions, 'wsRpcUrl' | 'onRpcState'>> &
    Pick<JobProducerOptions, 'onRpcState'> & { wsRpcUrl: string | undefined };
  #window: number;
  #wake: (() => void) | undefined;
  #latestHead: bigint | undefined;
  #kick = false;
  #lagging = false;

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
          this.#o.onRpcState?.(undefined);
        } catch (err) {
          if (signal.aborted) break;
          this.#o.onRpcState?.(err);
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
    const fork = sink.reorg ? await this.#forkPoint(sink, head) : undefined;
    if (fork !== undefined) {
      log.warn(
        { fork: `${fork}`, head: `${head}` },
        'chain reorganised under scanned blocks; rescanning from the fork',
      );
      next = await sink.reorg!(fork);
    }
    while (next <= safe && !signal.aborted) {
      const end = next + BigInt(this.#window) - 1n < safe ? next + BigInt(this.#window) - 1n : safe;
      // The head may come from a node ahead of the one answering eth_getLogs (a load balancer, a
      // WebSocket node, an indexer that clamps toBlock without an error): only a block the logs
      // transport itself returns is scanned, and its hash is checked against the logs after.
      const top = await this.#blockAtOrBelow(end);
      if (top === undefined || top.number < next) {
        this.#noteLag(end, top?.number);
        return next;
      }
      if (top.number < end) this.#noteLag(end, top.number);
      else this.#lagging = false;
      const to = top.number;
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
      // The chain may have moved since the fork check: the window counts only if the newest
      // scanned block below it and its own top still hold their hashes. Else a window read from a
      // new fork would be marked scanned on top of old hashes, and that fork never noticed.
      const below = sink.recentBlocks?.()[0];
      if (below && (await this.#hashAt(below.block)) !== below.hash) return next; // the next scan finds the fork
      if ((await this.#hashAt(to)) !== top.hash)
        throw new SdkError('RPC', `block ${to} changed while it was scanned (was ${top.hash})`);
      for (const bad of res.malformed)
        log.warn({ log: bad }, 'ignoring a JobSubmitted log that does not decode');
      for (const bad of res.foreign)
        log.warn(
          { address: bad.address, block: bad.blockNumber, tangle },
          'refusing a log from another contract or outside the asked range (the RPC ignored the filter)',
        );
      for (const event of res.events) {
        if (signal.aborted) return next;
        await sink.deliver(event);
      }
      // A log of block `to` under another hash: the chain moved under us; scan again.
      const stray = res.events.find((e) => e.blockNumber === to && e.blockHash.toLowerCase() !== top.hash);
      if (stray)
        throw new SdkError(
          'RPC',
          `block ${to} changed while it was scanned (logs of ${stray.blockHash}, block ${top.hash})`,
        );
      if (signal.aborted) return next;
      await sink.scanned(to, top.hash);
      next = to + 1n;
      if (this.#window < this.#o.windowBlocks)
        this.#window = Math.min(this.#o.windowBlocks, this.#window * 2);
    }
    return next;
  }

  /**
   * The newest scanned block whose hash is still the chain's, when the newest scanned one changed
   * (undefined while it has not; one read per scan). A block the node does not have (yet) is no
   * proof of a reorg: a lagging node is waited for, and a shorter new chain shows once it grows.
   */
  async #forkPoint(sink: JobSink, head: bigint): Promise<bigint | undefined> {
    const recent = sink.recentBlocks?.() ?? [];
    const hashAt = (n: bigint) => this.#hashAt(n);
    const top = recent[0];
    if (!top) return undefined;
    const now = await hashAt(top.block);
    if (now === top.hash) return undefined;
    if (now === undefined) {
      // The head went back below our newest block: a reorg only if a block we kept below it changed.
      const below = recent.find((r) => r.block <= head);
      if (!below || (await hashAt(below.block)) === below.hash) return undefined;
    }
    for (const r of recent.slice(1)) if ((await hashAt(r.block)) === r.hash) return r.block;
    return recent[recent.length - 1]!.block - 1n;
  }

  /** The hash of block `n` on the RPC's chain (lower case), undefined when it has no such block. */
  async #hashAt(n: bigint): Promise<string | undefined> {
    const b = (await this.#o.client.request({
      method: 'eth_getBlockByNumber',
      params: [numberToHex(n), false],
    })) as { hash: Hex | null } | null;
    return b?.hash?.toLowerCase();
  }

  /** Block `n` as the RPC has it, or its own best block when it has not got `n` yet. */
  async #blockAtOrBelow(n: bigint): Promise<{ number: bigint; hash: Hex } | undefined> {
    const { client } = this.#o;
    type RpcBlock = { number: Hex | null; hash: Hex | null } | null;
    const ask = (tag: Hex | 'latest') =>
      client.request({ method: 'eth_getBlockByNumber', params: [tag, false] }) as Promise<RpcBlock>;
    let b = await ask(numberToHex(n));
    if (!b?.hash || !b.number) b = await ask('latest');
    if (!b?.hash || !b.number) return undefined;
    const number = BigInt(b.number);
    return number > n ? undefined : { number, hash: b.hash.toLowerCase() as Hex };
  }

  #noteLag(wanted: bigint, has: bigint | undefined): void {
    if (this.#lagging) return;
    this.#lagging = true;
    this.#o.log.warn(
      { wanted: `${wanted}`, logsNodeHas: has === undefined ? null : `${has}` },
      'the RPC answering eth_getLogs is behind the head; scanning only the blocks it has',
    );
  }

  /** Asks for a scan now, or right after the one in progress. */
  #requestScan(): void {
    this.#kick = true;
    this.#wake?.();
  }

  #waitForTrigger(signal: AbortSignal): Promise<void> {
    const ms = this.#o.wsRpcUrl ? this.#o.pollIntervalMs * 4 : this.#o.pollIntervalMs;
    // Stopped during the scan: an abort listener added now would never fire, and the loop would
    // sleep a whole period (with WebSocket, 4x the poll interval) before it saw the stop.
    if (signal.aborted) return Promise.resolve();
    if (this.#kick) {
      this.#kick = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const inner = new AbortController();
      const done = () => {
        this.#wake = undefined;
        this.#kick = false;
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
   * Subscribes to new heads; each one wakes the scan loop, which scans from its cursor. Once a
   * (re)subscription is confirmed live the loop backfills from the cursor, so blocks mined while
   * the socket was down or still connecting are never missed. A dead socket is rebuilt with backoff.
   */
  #watchHeads(url: string, signal: AbortSignal): () => void {
    const { log } = this.#o;
    const backoff = new Backoff(500, 15_000);
    let current: { close(): void } | undefined;
    let retry: NodeJS.Timeout | undefined;
    const fail = (err: unknown) => {
      if (signal.aborted || retry) return;
      current?.close();
      current = undefined;
      const ms = backoff.next();
      log.warn(
        { err, retryInMs: ms },
        'websocket head subscription failed; resubscribing (polling meanwhile)',
      );
      retry = setTimeout(() => {
        retry = undefined;
        connect();
      }, ms);
      retry.unref();
      this.#requestScan();
    };
    const connect = () => {
      if (signal.aborted) return;
      // viem's own reconnect is off: it would resubscribe without telling us, and the backfill
      // must run after the subscription is live.
      const transport = webSocket(url, { reconnect: false, keepAlive: { interval: 15_000 } })({});
      let closed = false;
      const conn = {
        close: () => {
          closed = true;
          transport.value
            ?.getRpcClient()
            .then((c) => c.close())
            .catch(() => {});
        },
      };
      current = conn;
      transport.value
        ?.subscribe({
          params: ['newHeads'],
          onData: (data: { result?: { number?: Hex } }) => {
            const n = data.result?.number;
            if (closed || !n) return;
            const head = BigInt(n);
            if (this.#latestHead === undefined || head > this.#latestHead) this.#latestHead = head;
            this.#requestScan();
          },
          onError: (err: unknown) => {
            if (!closed) fail(err);
          },
        })
        .then(
          () => {
            if (closed) return;
            backoff.reset();
            log.debug('websocket head subscription live; backfilling from the cursor');
            this.#requestScan();
          },
          (err: unknown) => {
            if (!closed) fail(err);
          },
        );
    };
    connect();
    return () => {
      clearTimeout(retry);
      current?.close();
    };
  }
}
