// The durable job cursor: which JobSubmitted events are finished, persisted atomically in DATA_DIR
// so a restart (even after kill -9) delivers every unfinished job and redoes no finished one.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Address, Hex } from 'viem';
import { writeFileAtomic } from './atomic-file.ts';
import { SdkError } from './errors.ts';

/** How many scanned blocks keep their hash (a reorg deeper than this rescans from the oldest kept). */
export const RECENT_BLOCKS = 128;

/** Position of a log on chain; logs are processed in (block, logIndex) order. */
export interface LogPosition {
  block: bigint;
  logIndex: number;
}

export const comparePositions = (a: LogPosition, b: LogPosition): number =>
  a.block === b.block ? a.logIndex - b.logIndex : a.block < b.block ? -1 : 1;

/** A signed result transaction, persisted BEFORE it is broadcast so a restart re-sends the same bytes. */
export interface PendingResultTx {
  hash: Hex;
  raw: Hex;
  nonce: number;
  /** The calls it answers, with their event positions (so recovery can mark them done). */
  calls: Array<{ callId: bigint; pos: LogPosition }>;
}

interface CursorFile {
  version: 1;
  chainId: number;
  tangle: string;
  serviceId: string;
  cursor: { block: string; logIndex: number };
  done: Array<{ callId: string; block: string; logIndex: number }>;
  /** Hashes of recently scanned blocks (absent in files of older versions). */
  recent?: Array<{ block: string; hash: Hex }>;
  pendingTx: Array<{
    hash: Hex;
    raw: Hex;
    nonce: number;
    calls: Array<{ callId: string; block: string; logIndex: number }>;
  }>;
}

export interface JobCursorIdentity {
  chainId: number;
  tangle: Address;
  serviceId: bigint;
}

/**
 * Invariant: every event before `position` is finished (its result submitted, or deliberately
 * skipped); events at or after it are finished only if their call id is in `done`. The position is
 * the lowest unfinished in-flight event, or just past the last scanned block when none is in flight.
 * Call ids are unique per service, so they key the done set.
 */
export class JobCursor {
  readonly path: string;
  readonly identity: JobCursorIdentity;
  #position: LogPosition;
  readonly #done = new Map<bigint, LogPosition>();
  readonly #inFlight = new Map<bigint, LogPosition>();
  readonly #pending = new Map<Hex, PendingResultTx>();
  readonly #recent = new Map<bigint, Hex>();
  #scannedTo: bigint;
  #version = 0;
  #written = 0;
  #writing: Promise<void> | undefined;
  #lazy: NodeJS.Timeout | undefined;
  /** Delay for writing cursor moves that come from scanning alone. */
  lazyPersistMs = 1000;

  private constructor(path: string, identity: JobCursorIdentity, position: LogPosition) {
    this.path = path;
    this.identity = identity;
    this.#position = position;
    this.#scannedTo = position.block - 1n;
  }

  /** The cursor file for this chain, Tangle address and service, inside `dataDir`. */
  static fileFor(dataDir: string, id: JobCursorIdentity): string {
    return join(dataDir, `tangle-jobs-${id.chainId}-${id.tangle.toLowerCase()}-service-${id.serviceId}.json`);
  }

  /**
   * Opens the cursor file, or creates it at `startBlock()` (persisted at once, so jobs submitted
   * after this moment survive a crash even before the first one is seen).
   */
  static async open(
    dataDir: string,
    id: JobCursorIdentity,
    startBlock: () => Promise<bigint>,
  ): Promise<JobCursor> {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const path = JobCursor.fileFor(dataDir, id);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new SdkError('CURSOR', `Cannot read the job cursor ${path}: ${(e as Error).message}`, {
          cause: e,
        });
      }
    }
    if (text === undefined) {
      const c = new JobCursor(path, id, { block: await startBlock(), logIndex: 0 });
      await c.persist();
      return c;
    }
    let f: CursorFile;
    try {
      f = JSON.parse(text) as CursorFile;
      if (f.version !== 1 || typeof f.cursor?.block !== 'string') throw new Error('unknown layout');
    } catch (e) {
      throw new SdkError(
        'CURSOR',
        `The job cursor ${path} is corrupt (${(e as Error).message}); move it away to restart from the configured start block.`,
      );
    }
    if (
      f.chainId !== id.chainId ||
      f.tangle.toLowerCase() !== id.tangle.toLowerCase() ||
      f.serviceId !== `${id.serviceId}`
    ) {
      throw new SdkError('CURSOR', `The job cursor ${path} belongs to another chain, Tangle or service.`);
    }
    const c = new JobCursor(path, id, { block: BigInt(f.cursor.block), logIndex: f.cursor.logIndex });
    for (const d of f.done) c.#done.set(BigInt(d.callId), { block: BigInt(d.block), logIndex: d.logIndex });
    for (const r of f.recent ?? []) c.#recent.set(BigInt(r.block), r.hash);
    for (const p of f.pendingTx) {
      c.#pending.set(p.hash, {
        ...p,
        calls: p.calls.map((x) => ({
          callId: BigInt(x.callId),
          pos: { block: BigInt(x.block), logIndex: x.logIndex },
        })),
      });
    }
    return c;
  }

  /** Where scanning must (re)start: the block of the lowest unfinished event. */
  get position(): LogPosition {
    return { ...this.#position };
  }

  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  get pendingTxs(): PendingResultTx[] {
    return [...this.#pending.values()].sort((a, b) => a.nonce - b.nonce);
  }

  /** True if this event needs no (more) work: before the cursor, or its call id is done. */
  isFinished(callId: bigint, pos: LogPosition): boolean {
    return comparePositions(pos, this.#position) < 0 || this.#done.has(callId);
  }

  /** True while a signed result tx for this call awaits confirmation (sent before a crash, maybe). */
  isPending(callId: bigint): boolean {
    for (const t of this.#pending.values()) if (t.calls.some((c) => c.callId === callId)) return true;
    return false;
  }

  isInFlight(callId: bigint): boolean {
    return this.#inFlight.has(callId);
  }

  /** Marks an event as taken by a handler; the cursor cannot pass it until `finish`. */
  begin(callId: bigint, pos: LogPosition): void {
    this.#inFlight.set(callId, pos);
  }

  /**
   * The producer delivered every event up to and including `block`. The move is written lazily
   * (within `lazyPersistMs`, or with the next write): losing it in a crash only means rescanning
   * blocks whose events are all finished or unfinished as the file says, so nothing is lost or redone.
   */
  scanned(block: bigint, blockHash?: Hex): void {
    if (block <= this.#scannedTo) return;
    this.#scannedTo = block;
    if (blockHash) this.#noteHash(block, blockHash);
    if (!this.#advance() || this.#lazy) return;
    this.#lazy = setTimeout(() => {
      this.#lazy = undefined;
      this.persist().catch(() => {}); // a failing disk surfaces on the next awaited write
    }, this.lazyPersistMs);
    this.#lazy.unref();
  }

  /** Remembers the hash of a scanned block (the newest RECENT_BLOCKS), to notice a reorg under it. */
  #noteHash(block: bigint, hash: Hex): void {
    this.#recent.set(block, hash.toLowerCase() as Hex);
    if (this.#recent.size <= RECENT_BLOCKS) return;
    const oldest = [...this.#recent.keys()].reduce((a, b) => (a < b ? a : b));
    this.#recent.delete(oldest);
  }

  /** Scanned blocks with the hash each had when scanned, newest first. */
  get recentBlocks(): Array<{ block: bigint; hash: Hex }> {
    return [...this.#recent]
      .map(([block, hash]) => ({ block, hash }))
      .sort((a, b) => (a.block < b.block ? 1 : a.block > b.block ? -1 : 0));
  }

  /** The call's result is on chain (or it was deliberately skipped): durable once this resolves. */
  finish(callId: bigint, pos?: LogPosition): Promise<void> {
    this.#markFinished(callId, pos);
    this.#advance();
    return this.persist();
  }

  #markFinished(callId: bigint, pos?: LogPosition): void {
    const p = this.#inFlight.get(callId) ?? pos;
    this.#inFlight.delete(callId);
    if (p && comparePositions(p, this.#position) >= 0) this.#done.set(callId, p);
  }

  /** Records a signed result tx; resolves once it is durable, so it may then be broadcast. */
  addPending(tx: PendingResultTx): Promise<void> {
    this.#pending.set(tx.hash, tx);
    return this.persist();
  }

  /** The tx is mined: its calls are finished and the tx forgotten, in one durable write. */
  settlePending(hash: Hex, finished: Array<{ callId: bigint; pos: LogPosition }>): Promise<void> {
    for (const c of finished) this.#markFinished(c.callId, c.pos);
    this.#pending.delete(hash);
    this.#advance();
    return this.persist();
  }

  removePending(hash: Hex): Promise<void> {
    this.#pending.delete(hash);
    return this.persist();
  }

  /** Recomputes the position; returns true when it moved. */
  #advance(): boolean {
    let next: LogPosition = { block: this.#scannedTo + 1n, logIndex: 0 };
    for (const p of this.#inFlight.values()) if (comparePositions(p, next) < 0) next = p;
    if (comparePositions(next, this.#position) <= 0) return false;
    this.#position = next;
    for (const [id, p] of this.#done) if (comparePositions(p, next) < 0) this.#done.delete(id);
    return true;
  }

  #serialize(): string {
    const f: CursorFile = {
      version: 1,
      chainId: this.identity.chainId,
      tangle: this.identity.tangle,
      serviceId: `${this.identity.serviceId}`,
      cursor: { block: `${this.#position.block}`, logIndex: this.#position.logIndex },
      done: [...this.#done].map(([callId, p]) => ({
        callId: `${callId}`,
        block: `${p.block}`,
        logIndex: p.logIndex,
      })),
      recent: this.recentBlocks.map((r) => ({ block: `${r.block}`, hash: r.hash })),
      pendingTx: this.pendingTxs.map((t) => ({
        ...t,
        calls: t.calls.map((x) => ({
          callId: `${x.callId}`,
          block: `${x.pos.block}`,
          logIndex: x.pos.logIndex,
        })),
      })),
    };
    return `${JSON.stringify(f, null, 1)}\n`;
  }

  /** Writes the state; concurrent calls coalesce into as few writes as possible, each awaited durably. */
  async persist(): Promise<void> {
    clearTimeout(this.#lazy);
    this.#lazy = undefined;
    const target = ++this.#version;
    while (this.#written < target) {
      if (this.#writing) {
        await this.#writing.catch(() => {});
        continue;
      }
      const v = this.#version;
      this.#writing = writeFileAtomic(this.path, this.#serialize()).then(
        () => {
          this.#written = Math.max(this.#written, v);
        },
        (e: unknown) => {
          throw new SdkError('CURSOR', `Cannot write the job cursor ${this.path}: ${(e as Error).message}`, {
            cause: e,
          });
        },
      );
      try {
        await this.#writing;
      } finally {
        this.#writing = undefined;
      }
    }
  }
}
