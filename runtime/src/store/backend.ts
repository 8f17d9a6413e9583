// The open LevelDB behind an EncryptedStore and its keys; shared by the store and its collections,
// never exported from the package. It maps LevelDB's failures to our errors and recovers from a
// full disk (see Backend).
import { readdir, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import { RuntimeError } from '../errors.ts';
import { KeyLock } from './key-lock.ts';
import type { StoreKeys } from './sealing.ts';

const MAX_ID_LEN = 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export type Db = Level<string, Uint8Array>;

/**
 * The open database and its keys.
 * After a failed write (a full disk) the handle is not written to again: LevelDB's log then ends in
 * a torn record, and records appended behind it are silently lost at the next open. Writes are
 * refused (STORE_FULL) until there is room, then the database is reopened — which drops the torn
 * tail and starts a new log — and writes go on.
 */
export class Backend {
  db: Db;
  readonly dir: string;
  readonly keys: StoreKeys;
  readonly sync: boolean;
  readonly #lock = new KeyLock();
  closed = false;
  /** Why writes are refused (a failed write broke the handle), until a reopen succeeds. */
  #broken: RuntimeError | undefined;
  #reopening: Promise<void> | undefined;
  /** The handle is closed (a reopen failed): reads too must reopen first. */
  #down = false;
  #active = 0;
  #idle: Array<() => void> = [];

  constructor(db: Db, dir: string, keys: StoreKeys, sync: boolean) {
    this.db = db;
    this.dir = dir;
    this.keys = keys;
    this.sync = sync;
  }

  diskKey(collection: string, id: string): string {
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LEN) {
      throw new RuntimeError(
        'VALIDATION',
        `record id must be a non-empty string of at most ${MAX_ID_LEN} chars`,
      );
    }
    return `${collection}!${this.keys.diskKey(collection, id)}`;
  }

  seal(key: string, id: string, value: unknown): Uint8Array {
    const json = JSON.stringify({ i: id, v: value });
    if (json === undefined) {
      throw new RuntimeError('VALIDATION', 'store values must be JSON-serializable');
    }
    return this.keys.seal(key, encoder.encode(json));
  }

  open(collection: string, key: string, sealed: Uint8Array): { i: string; v: unknown } {
    const plain = this.keys.open(key, sealed);
    if (plain === undefined) {
      throw new RuntimeError(
        'STORE_CORRUPT',
        `a record in collection "${collection}" failed authentication (modified on disk, moved between keys, or written under another secret); restore the store from a backup`,
      );
    }
    return JSON.parse(decoder.decode(plain)) as { i: string; v: unknown };
  }

  /**
   * Runs a LevelDB operation, mapping its failures to STORE_FULL (no space: nothing was written)
   * or STORE_UNAVAILABLE. A write while the handle is broken first tries to recover.
   */
  async run<R>(op: (db: Db, sync: boolean) => Promise<R>, kind: 'read' | 'write' = 'read'): Promise<R> {
    if (this.closed) {
      throw new RuntimeError('STORE_UNAVAILABLE', 'the store is closed; reopen it to continue');
    }
    while (this.#reopening) await this.#reopening.catch(() => {});
    if (this.#broken && (kind === 'write' || this.#down)) await this.#recover();
    this.#active++;
    try {
      return await op(this.db, this.sync);
    } catch (cause) {
      if (cause instanceof RuntimeError) throw cause;
      if (kind === 'write' && (cause as { code?: string }).code === 'LEVEL_IO_ERROR') {
        this.#broken = storeFull(this.dir, cause);
        throw this.#broken;
      }
      throw new RuntimeError(
        'STORE_UNAVAILABLE',
        `the store in ${this.dir} could not complete the operation; check disk space and permissions`,
        { cause },
      );
    } finally {
      this.#active--;
      if (this.#active === 0) for (const go of this.#idle.splice(0)) go();
    }
  }

  /** True while writes are refused (a failed write broke the handle and no reopen succeeded yet). */
  get broken(): boolean {
    return this.#broken !== undefined;
  }

  /**
   * Resolves once the store takes writes again: at once when it does; else it tries to reopen
   * every `everyMs` until the filesystem has room (or the store is closed: then it rejects).
   */
  async writable(everyMs = 1000): Promise<void> {
    while (this.#broken) {
      if (this.closed) throw new RuntimeError('STORE_UNAVAILABLE', 'the store is closed');
      await this.#recover().catch(() => new Promise((r) => setTimeout(r, everyMs).unref()));
    }
  }

  /** Reopens the database once its filesystem has room again; else refuses the write. */
  #recover(): Promise<void> {
    this.#reopening ??= (async () => {
      const broken = this.#broken!;
      if ((await freeBytes(this.dir)) < (await logBytes(this.dir)) + REOPEN_HEADROOM) throw broken;
      if (this.#active > 0) await new Promise<void>((go) => this.#idle.push(go));
      await this.db.close().catch(() => {});
      const db: Db = new Level<string, Uint8Array>(this.dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
      this.db = db;
      try {
        await db.open();
      } catch (cause) {
        // Still no room for the replayed log: every operation retries the reopen until one succeeds.
        this.#down = true;
        this.#broken = storeFull(this.dir, cause);
        throw this.#broken;
      }
      this.#broken = undefined;
      this.#down = false;
    })().finally(() => {
      this.#reopening = undefined;
    });
    return this.#reopening;
  }

  /** Runs `fn` holding the per-key locks of all `keys` (taken in sorted order: no deadlock). */
  locked<R>(keys: readonly string[], fn: () => Promise<R>): Promise<R> {
    const sorted = [...new Set(keys)].sort();
    const step = (i: number): Promise<R> =>
      i === sorted.length ? fn() : this.#lock.run(sorted[i] as string, () => step(i + 1));
    return step(0);
  }
}

/** Room a reopen needs beyond the log it replays into a table (LevelDB's own files, a new log). */
const REOPEN_HEADROOM = 256 * 1024;

function storeFull(dir: string, cause: unknown): RuntimeError {
  const text = String((cause as Error)?.message ?? cause);
  const why = /no space/i.test(text) ? 'is full (no space left on device)' : 'failed a write (an I/O error)';
  return new RuntimeError(
    'STORE_FULL',
    `the operator's store in ${dir} ${why}: nothing was written; free space on that filesystem (or grow it), and writes resume by themselves once there is room`,
    { cause },
  );
}

async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir).catch(() => undefined);
  return s ? s.bavail * s.bsize : 0;
}

/** Size of LevelDB's write-ahead logs in `dir` (what a reopen writes out as a table). */
async function logBytes(dir: string): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir).catch(() => [] as string[])) {
    if (f.endsWith('.log')) n += (await stat(join(dir, f)).catch(() => ({ size: 0 }))).size;
  }
  return n;
}
