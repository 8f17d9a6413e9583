// The durable job cursor: which JobSubmitted events are finished, persisted atomically in DATA_DIR
// so a restart (even after kill -9) delivers every unfinished job and redoes no finished one.
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Address, Hex } from 'viem';
import { writeFileAtomic } from './atomic-file.ts';
import { SdkError } from './errors.ts';
import { noSpace, ReserveSlots } from './reserve-slots.ts';

/** How many scanned blocks keep their hash (a reorg deeper than this rescans from the oldest kept). */
export const RECENT_BLOCKS = 128;

/** Position of a log on chain; logs are processed in (block, logIndex) order. */
export interface LogPosition {
  block: bigint;
  logIndex: number;
}

/** Two block hashes name the same block (an unknown one, from an older file, matches any). */
const sameBlock = (a: Hex | undefined, b: Hex | undefined): boolean =>
  a === undefined || b === undefined || a.toLowerCase() === b.toLowerCase();

export const comparePositions = (a: LogPosition, b: LogPosition): number =>
  a.block === b.block ? a.logIndex - b.logIndex : a.block < b.block ? -1 : 1;

/** A signed result transaction, persisted BEFORE it is broadcast so a restart re-sends the same bytes. */
export interface PendingResultTx {
  hash: Hex;
  raw: Hex;
  nonce: number;
  /** The calls it answers, with their event positions (so recovery can mark them done). */
  calls: CallRef[];
}

/** One call as the chain showed it: its id, its log's position and the hash of the log's block. */
export interface CallRef {
  callId: bigint;
  pos: LogPosition;
  /** Absent in files of older versions. A call is (callId, blockHash): a reorg can reuse the id. */
  blockHash?: Hex | undefined;
}

/** A call this cursor knows above a fork block, and how far it got. */
export interface CallAboveFork extends CallRef {
  state: 'in-flight' | 'done' | 'answered';
}

interface CursorFile {
  version: 1;
  /** Write sequence number (absent in files of older versions): the newer of file and reserve wins. */
  seq?: number;
  chainId: number;
  tangle: string;
  serviceId: string;
  cursor: { block: string; logIndex: number };
  done: Array<{ callId: string; block: string; logIndex: number; blockHash?: Hex; answered?: boolean }>;
  /** Hashes of recently scanned blocks (absent in files of older versions). */
  recent?: Array<{ block: string; hash: Hex }>;
  pendingTx: Array<{
    hash: Hex;
    raw: Hex;
    nonce: number;
    calls: Array<{ callId: string; block: string; logIndex: number; blockHash?: Hex }>;
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
 * A call is its id AND its log's block hash: after a reorg the new chain may reuse an id, so the
 * done set is keyed by id but matched on the hash, and keeps recent calls for a reorg to find.
 */
export class JobCursor {
  readonly path: string;
  readonly identity: JobCursorIdentity;
  #position: LogPosition;
  readonly #done = new Map<bigint, { pos: LogPosition; blockHash?: Hex | undefined; answered?: boolean }>();
  readonly #inFlight = new Map<bigint, { pos: LogPosition; blockHash?: Hex | undefined }>();
  readonly #pending = new Map<Hex, PendingResultTx>();
  readonly #recent = new Map<bigint, Hex>();
  #scannedTo: bigint;
  #version = 0;
  #written = 0;
  /** Sequence number of the last write (file or reserve). */
  #seq = 0;
  #reserved = false;
  #slots: ReserveSlots;
  #writing: Promise<void> | undefined;
  #lazy: NodeJS.Timeout | undefined;
  /** Delay for writing cursor moves that come from scanning alone. */
  lazyPersistMs = 1000;

  private constructor(path: string, identity: JobCursorIdentity, position: LogPosition) {
    this.path = path;
    this.identity = identity;
    this.#position = position;
    this.#scannedTo = position.block - 1n;
    this.#slots = new ReserveSlots(path);
  }

  /** True while the newest state is held in the reserve (the disk had no room for the file). */
  get reserved(): boolean {
    return this.#reserved;
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
    const slots = new ReserveSlots(path);
    if (text === undefined) {
      // A new cursor: reserve slots of an earlier one (moved away) must not outrank it.
      for (const p of slots.paths) await rm(p, { force: true });
      const c = new JobCursor(path, id, { block: await startBlock(), logIndex: 0 });
      await c.persist();
      return c;
    }
    let f = parseCursor(path, text);
    // The disk was full at the last writes: the reserve holds a newer state than the file.
    const reserved = await slots.read();
    if (reserved && reserved.seq > (f.seq ?? 0)) f = parseCursor(`${path} (its reserve)`, reserved.content);
    if (
      f.chainId !== id.chainId ||
      f.tangle.toLowerCase() !== id.tangle.toLowerCase() ||
      f.serviceId !== `${id.serviceId}`
    ) {
      throw new SdkError('CURSOR', `The job cursor ${path} belongs to another chain, Tangle or service.`);
    }
    const c = new JobCursor(path, id, { block: BigInt(f.cursor.block), logIndex: f.cursor.logIndex });
    c.#seq = Math.max(f.seq ?? 0, reserved?.seq ?? 0);
    c.#slots = slots;
    for (const d of f.done)
      c.#done.set(BigInt(d.callId), {
        pos: { block: BigInt(d.block), logIndex: d.logIndex },
        blockHash: d.blockHash,
        ...(d.answered ? { answered: true } : {}),
      });
    for (const r of f.recent ?? []) c.#recent.set(BigInt(r.block), r.hash);
    for (const p of f.pendingTx) {
      c.#pending.set(p.hash, {
        ...p,
        calls: p.calls.map((x) => ({
          callId: BigInt(x.callId),
          pos: { block: BigInt(x.block), logIndex: x.logIndex },
          blockHash: x.blockHash,
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

  /** True if this event needs no (more) work: before the cursor, or this call (id and block) is done. */
  isFinished(callId: bigint, pos: LogPosition, blockHash?: Hex): boolean {
    if (comparePositions(pos, this.#position) < 0) return true;
    const d = this.#done.get(callId);
    return d !== undefined && sameBlock(d.blockHash, blockHash);
  }

  /** True while a signed result tx for this call awaits confirmation (sent before a crash, maybe). */
  isPending(callId: bigint, blockHash?: Hex): boolean {
    for (const t of this.#pending.values())
      if (t.calls.some((c) => c.callId === callId && sameBlock(c.blockHash, blockHash))) return true;
    return false;
  }

  isInFlight(callId: bigint, blockHash?: Hex): boolean {
    const f = this.#inFlight.get(callId);
    return f !== undefined && sameBlock(f.blockHash, blockHash);
  }

  /** Marks an event as taken by a handler; the cursor cannot pass it until `finish`. */
  begin(callId: bigint, pos: LogPosition, blockHash?: Hex): void {
    this.#inFlight.set(callId, { pos, blockHash });
  }

  /**
   * The chain forked after block `fork`: forgets the hashes above it and moves the scan back to
   * it. Returns the calls known at or above `fork - RECENT_BLOCKS` (in flight, done, or answered by
   * us), for the caller to check which still exist and which results are still on chain.
   */
  rewind(fork: bigint): CallAboveFork[] {
    for (const b of [...this.#recent.keys()]) if (b > fork) this.#recent.delete(b);
    if (this.#scannedTo > fork) this.#scannedTo = fork;
    const out: CallAboveFork[] = [];
    for (const [callId, f] of this.#inFlight) out.push({ callId, ...f, state: 'in-flight' });
    for (const [callId, d] of this.#done)
      out.push({ callId, pos: d.pos, blockHash: d.blockHash, state: d.answered ? 'answered' : 'done' });
    const back = { block: fork + 1n, logIndex: 0 };
    if (comparePositions(back, this.#position) < 0) this.#position = back;
    return out;
  }

  /** The call no longer exists on chain (a reorg), or must be served again: drops what is known of it. */
  forget(callId: bigint): Promise<void> {
    const f = this.#inFlight.get(callId) ?? this.#done.get(callId);
    this.#inFlight.delete(callId);
    this.#done.delete(callId);
    if (f && comparePositions(f.pos, this.#position) < 0) this.#position = { ...f.pos };
    return this.persist();
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

  #markFinished(callId: bigint, pos?: LogPosition, blockHash?: Hex, answered = false): void {
    const f = this.#inFlight.get(callId);
    this.#inFlight.delete(callId);
    const p = f?.pos ?? pos;
    if (p && p.block + BigInt(RECENT_BLOCKS) >= this.#position.block)
      this.#done.set(callId, {
        pos: p,
        blockHash: f?.blockHash ?? blockHash,
        ...(answered ? { answered } : {}),
      });
  }

  /** Records a signed result tx; resolves once it is durable, so it may then be broadcast. */
  addPending(tx: PendingResultTx): Promise<void> {
    this.#pending.set(tx.hash, tx);
    return this.persist();
  }

  /** The tx is mined: its calls are finished and the tx forgotten, in one durable write. */
  settlePending(hash: Hex, finished: CallRef[]): Promise<void> {
    for (const c of finished) this.#markFinished(c.callId, c.pos, c.blockHash, true);
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
    for (const { pos } of this.#inFlight.values()) if (comparePositions(pos, next) < 0) next = pos;
    if (comparePositions(next, this.#position) <= 0) return false;
    this.#position = next;
    // Done calls stay known for RECENT_BLOCKS blocks: a reorg there must find what we answered.
    for (const [id, d] of this.#done)
      if (d.pos.block + BigInt(RECENT_BLOCKS) < next.block) this.#done.delete(id);
    return true;
  }

  #serialize(seq: number): string {
    const f: CursorFile = {
      version: 1,
      seq,
      chainId: this.identity.chainId,
      tangle: this.identity.tangle,
      serviceId: `${this.identity.serviceId}`,
      cursor: { block: `${this.#position.block}`, logIndex: this.#position.logIndex },
      done: [...this.#done].map(([callId, d]) => ({
        callId: `${callId}`,
        block: `${d.pos.block}`,
        logIndex: d.pos.logIndex,
        ...(d.blockHash ? { blockHash: d.blockHash } : {}),
        ...(d.answered ? { answered: true } : {}),
      })),
      recent: this.recentBlocks.map((r) => ({ block: `${r.block}`, hash: r.hash })),
      pendingTx: this.pendingTxs.map((t) => ({
        ...t,
        calls: t.calls.map((x) => ({
          callId: `${x.callId}`,
          block: `${x.pos.block}`,
          logIndex: x.pos.logIndex,
          ...(x.blockHash ? { blockHash: x.blockHash } : {}),
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
      this.#writing = this.#write().then(
        () => {
          this.#written = Math.max(this.#written, v);
        },
        (e: unknown) => {
          const why = noSpace(e) ? ' (no space left, and the reserve could not hold it)' : '';
          throw new SdkError(
            'CURSOR',
            `Cannot write the job cursor ${this.path}${why}: ${(e as Error).message}`,
            {
              cause: e,
            },
          );
        },
      );
      try {
        await this.#writing;
      } finally {
        this.#writing = undefined;
      }
    }
  }

  /**
   * Writes the file (tmp + fsync + rename); when the disk has no room for it, the same content goes
   * in place into the reserve, so a result can still be made durable and sent on a full disk.
   */
  async #write(): Promise<void> {
    const seq = ++this.#seq;
    const content = this.#serialize(seq);
    try {
      await writeFileAtomic(this.path, content);
    } catch (e) {
      if (!noSpace(e) || this.#slots.size === 0) throw e;
      await this.#slots.write(seq, content).catch(() => Promise.reject(e));
      this.#reserved = true;
      return;
    }
    this.#reserved = false;
    await this.#slots.ensure(Buffer.byteLength(content)).catch(() => {});
  }
}

function parseCursor(path: string, text: string): CursorFile {
  try {
    const f = JSON.parse(text) as CursorFile;
    if (f.version !== 1 || typeof f.cursor?.block !== 'string') throw new Error('unknown layout');
    return f;
  } catch (e) {
    throw new SdkError(
      'CURSOR',
      `The job cursor ${path} is corrupt (${(e as Error).message}); move it (and its .reserve-* files) away to restart from the configured start block.`,
    );
  }
}
