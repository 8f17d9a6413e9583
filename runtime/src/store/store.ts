// The operator's one persistent store: LevelDB on disk, every value sealed, ids HMAC'd into keys.
//
// On-disk layout (one LevelDB in `dir`):
//   key   = `{collection}!{hex HMAC-SHA256(indexKey, collection ‖ 0 ‖ id)}`  — no id in plaintext
//   value = 0x01 ‖ nonce(24) ‖ XChaCha20-Poly1305(valueKey, nonce, aad = key, JSON {i: id, v: value})
// Both keys come from SESSION_AUTH_SECRET via HKDF-SHA256 (see sealing.ts). Binding the disk key as
// associated data means a value copied under another key fails to open. Collection names are the
// only plaintext on disk; they name kinds of records, never their contents.
import { mkdir } from 'node:fs/promises';
import { Level } from 'level';
import type { z } from 'zod';
import { parseAuthSecret } from '../crypto.ts';
import { RuntimeError } from '../errors.ts';
import { Backend, type Db } from './backend.ts';
import { StoreKeys } from './sealing.ts';

const SENTINEL_KEY = '_meta!sentinel';
const SENTINEL_TEXT = 'agent-sandbox-store-sentinel-v1';
const COLLECTION_RE = /^[a-z][a-z0-9_-]{0,63}$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface EncryptedStoreOptions {
  /** Directory of the LevelDB (created 0700 if missing). */
  dir: string;
  /** SESSION_AUTH_SECRET: 32 bytes as 64 hex chars. */
  secret: string;
  /** fsync every write (survives power loss, slower). Default false: survives process crashes. */
  sync?: boolean;
}

export interface StoreCollection<T> {
  readonly name: string;
  get(id: string): Promise<T | undefined>;
  has(id: string): Promise<boolean>;
  put(id: string, value: T): Promise<void>;
  /** Writes all entries atomically (one LevelDB batch). */
  putMany(entries: ReadonlyArray<readonly [string, T]>): Promise<void>;
  del(id: string): Promise<void>;
  /** Deletes all ids atomically. */
  delMany(ids: readonly string[]): Promise<void>;
  /** A put to hand to `commit`, checked and sealed now; nothing is written until then. */
  putOp(id: string, value: T): StoreWrite;
  /** A delete to hand to `commit`. */
  delOp(id: string): StoreWrite;
  /**
   * Writes `ops`, made by any collections of the same store, in one LevelDB batch: all or none
   * (a full disk refuses the whole batch); holds the per-id locks `update` takes.
   */
  commit(ops: readonly StoreWrite[]): Promise<void>;
  /** Resolves once the store takes writes again (at once unless a full disk stopped them). */
  writable(): Promise<void>;
  values(): Promise<T[]>;
  entries(): Promise<Array<[string, T]>>;
  find(predicate: (value: T, id: string) => boolean): Promise<T[]>;
  /** Number of records, without decrypting them. */
  count(): Promise<number>;
  /**
   * Read-modify-write, serialized per id within this process (puts and dels on the same id wait
   * too). Returning undefined deletes the record. Returns what was written.
   */
  update(
    id: string,
    fn: (current: T | undefined) => T | undefined | Promise<T | undefined>,
  ): Promise<T | undefined>;
}

/** One write of a cross-collection batch (StoreCollection.commit); made by putOp / delOp. */
export interface StoreWrite {
  readonly type: 'put' | 'del';
  readonly key: string;
  readonly value?: Uint8Array;
  /** The store it belongs to: a batch never mixes stores. */
  readonly store: object;
}

export class EncryptedStore {
  readonly #b: Backend;
  readonly #collections = new Map<string, StoreCollection<unknown>>();

  private constructor(b: Backend) {
    this.#b = b;
  }

  /**
   * Opens (creating if needed) the store in `dir`. Fails with STORE_KEY_MISMATCH when the store was
   * created under another secret, STORE_UNAVAILABLE when another process holds it, CONFIG_INVALID
   * when the secret is malformed.
   */
  static async open(opts: EncryptedStoreOptions): Promise<EncryptedStore> {
    const secret = parseAuthSecret(opts.secret);
    if (typeof opts.dir !== 'string' || opts.dir === '') {
      throw new RuntimeError('CONFIG_INVALID', 'store dir must be a non-empty path');
    }
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    const db: Db = new Level<string, Uint8Array>(opts.dir, {
      keyEncoding: 'utf8',
      valueEncoding: 'view',
    });
    try {
      await db.open();
    } catch (cause) {
      const locked = (cause as { cause?: { code?: string } }).cause?.code === 'LEVEL_LOCKED';
      throw new RuntimeError(
        'STORE_UNAVAILABLE',
        locked
          ? `store directory ${opts.dir} is in use by another process; stop it or use another BLUEPRINT_STATE_DIR`
          : `cannot open the store in ${opts.dir}; check the directory exists and is writable`,
        { cause },
      );
    }
    const keys = new StoreKeys(secret);
    try {
      await checkSentinel(db, keys, opts.dir);
    } catch (e) {
      await db.close();
      throw e;
    }
    return new EncryptedStore(new Backend(db, opts.dir, keys, opts.sync ?? false));
  }

  /** A typed view of one kind of record. `schema` (zod) is checked on every write and read. */
  collection<T>(name: string, schema?: z.ZodType<T>): StoreCollection<T> {
    if (!COLLECTION_RE.test(name)) {
      throw new RuntimeError(
        'VALIDATION',
        `collection name "${name}" must match ${COLLECTION_RE} (names starting with "_" are reserved)`,
      );
    }
    const existing = this.#collections.get(name);
    if (existing && !schema) return existing as StoreCollection<T>;
    const coll = new Collection<T>(this.#b, name, schema);
    if (!existing) this.#collections.set(name, coll as StoreCollection<unknown>);
    return coll;
  }

  get closed(): boolean {
    return this.#b.closed;
  }

  /** The store's key for snapshot objects sent to object storage (derived from the same secret). */
  objectKey(): Uint8Array {
    return this.#b.keys.objectKey();
  }

  /** Waits for nothing in flight beyond what LevelDB itself finishes; later calls fail cleanly. */
  async close(): Promise<void> {
    if (this.#b.closed) return;
    this.#b.closed = true;
    await this.#b.db.close();
  }
}

/** Verifies the secret against the sentinel record, or writes the sentinel into a new store. */
async function checkSentinel(db: Db, keys: StoreKeys, dir: string): Promise<void> {
  const sealed = await db.get(SENTINEL_KEY);
  if (sealed !== undefined) {
    const plain = keys.open(SENTINEL_KEY, sealed);
    if (plain === undefined || decoder.decode(plain) !== SENTINEL_TEXT) {
      throw new RuntimeError(
        'STORE_KEY_MISMATCH',
        `the store in ${dir} was created with a different SESSION_AUTH_SECRET; restore that secret, or move the directory aside to start empty (its data cannot be read without the old secret)`,
      );
    }
    return;
  }
  for await (const _ of db.keys({ limit: 1 })) {
    throw new RuntimeError(
      'STORE_KEY_MISMATCH',
      `the store in ${dir} holds data but no key check record, so it cannot be verified against SESSION_AUTH_SECRET; move the directory aside to start empty`,
    );
  }
  await db.put(SENTINEL_KEY, keys.seal(SENTINEL_KEY, encoder.encode(SENTINEL_TEXT)), { sync: true });
}

class Collection<T> implements StoreCollection<T> {
  readonly name: string;
  readonly #b: Backend;
  readonly #schema: z.ZodType<T> | undefined;

  constructor(b: Backend, name: string, schema: z.ZodType<T> | undefined) {
    this.#b = b;
    this.name = name;
    this.#schema = schema;
  }

  #check(value: unknown, when: 'write' | 'read'): T {
    if (!this.#schema) return value as T;
    const r = this.#schema.safeParse(value);
    if (r.success) return r.data;
    if (when === 'write') {
      throw new RuntimeError(
        'VALIDATION',
        `value for collection "${this.name}" does not match its schema: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      );
    }
    throw new RuntimeError(
      'STORE_CORRUPT',
      `a stored record in "${this.name}" no longer matches its schema; migrate or remove it`,
      { cause: r.error },
    );
  }

  #decode(key: string, sealed: Uint8Array): [string, T] {
    const rec = this.#b.open(this.name, key, sealed);
    return [rec.i, this.#check(rec.v, 'read')];
  }

  async get(id: string): Promise<T | undefined> {
    const key = this.#b.diskKey(this.name, id);
    const sealed = await this.#b.run((db) => db.get(key));
    return sealed === undefined ? undefined : this.#decode(key, sealed)[1];
  }

  async has(id: string): Promise<boolean> {
    const key = this.#b.diskKey(this.name, id);
    return (await this.#b.run((db) => db.get(key))) !== undefined;
  }

  async put(id: string, value: T): Promise<void> {
    const key = this.#b.diskKey(this.name, id);
    const sealed = this.#b.seal(key, id, this.#check(value, 'write'));
    await this.#b.locked([key], () => this.#b.run((db, sync) => db.put(key, sealed, { sync }), 'write'));
  }

  async putMany(entries: ReadonlyArray<readonly [string, T]>): Promise<void> {
    const ops = entries.map(([id, value]) => {
      const key = this.#b.diskKey(this.name, id);
      const sealed = this.#b.seal(key, id, this.#check(value, 'write'));
      return { type: 'put' as const, key, value: sealed };
    });
    if (ops.length === 0) return;
    await this.#b.locked(
      ops.map((o) => o.key),
      () => this.#b.run((db, sync) => db.batch(ops, { sync }), 'write'),
    );
  }

  putOp(id: string, value: T): StoreWrite {
    const key = this.#b.diskKey(this.name, id);
    return { type: 'put', key, value: this.#b.seal(key, id, this.#check(value, 'write')), store: this.#b };
  }

  delOp(id: string): StoreWrite {
    return { type: 'del', key: this.#b.diskKey(this.name, id), store: this.#b };
  }

  async commit(ops: readonly StoreWrite[]): Promise<void> {
    if (ops.length === 0) return;
    if (ops.some((o) => o.store !== this.#b)) {
      throw new RuntimeError(
        'VALIDATION',
        'a store batch may only hold writes of collections of the same store',
      );
    }
    const batch = ops.map((o) =>
      o.type === 'put'
        ? { type: 'put' as const, key: o.key, value: o.value as Uint8Array }
        : { type: 'del' as const, key: o.key },
    );
    await this.#b.locked(
      ops.map((o) => o.key),
      () => this.#b.run((db, sync) => db.batch(batch, { sync }), 'write'),
    );
  }

  writable(): Promise<void> {
    return this.#b.writable();
  }

  async del(id: string): Promise<void> {
    const key = this.#b.diskKey(this.name, id);
    await this.#b.locked([key], () => this.#b.run((db, sync) => db.del(key, { sync }), 'write'));
  }

  async delMany(ids: readonly string[]): Promise<void> {
    const ops = ids.map((id) => ({ type: 'del' as const, key: this.#b.diskKey(this.name, id) }));
    if (ops.length === 0) return;
    await this.#b.locked(
      ops.map((o) => o.key),
      () => this.#b.run((db, sync) => db.batch(ops, { sync }), 'write'),
    );
  }

  async entries(): Promise<Array<[string, T]>> {
    const raw = await this.#b.run(async (db) => {
      const out: Array<[string, Uint8Array]> = [];
      for await (const kv of db.iterator({ gt: `${this.name}!`, lt: `${this.name}"` })) out.push(kv);
      return out;
    });
    return raw.map(([key, sealed]) => this.#decode(key, sealed));
  }

  async values(): Promise<T[]> {
    return (await this.entries()).map(([, v]) => v);
  }

  async find(predicate: (value: T, id: string) => boolean): Promise<T[]> {
    return (await this.entries()).filter(([id, v]) => predicate(v, id)).map(([, v]) => v);
  }

  async count(): Promise<number> {
    return this.#b.run(async (db) => {
      let n = 0;
      for await (const _ of db.keys({ gt: `${this.name}!`, lt: `${this.name}"` })) n++;
      return n;
    });
  }

  async update(
    id: string,
    fn: (current: T | undefined) => T | undefined | Promise<T | undefined>,
  ): Promise<T | undefined> {
    const key = this.#b.diskKey(this.name, id);
    return this.#b.locked([key], async () => {
      const sealed = await this.#b.run((db) => db.get(key));
      const current = sealed === undefined ? undefined : this.#decode(key, sealed)[1];
      const next = await fn(current);
      if (next === undefined) {
        if (sealed !== undefined) await this.#b.run((db, sync) => db.del(key, { sync }), 'write');
        return undefined;
      }
      const checked = this.#check(next, 'write');
      const out = this.#b.seal(key, id, checked);
      await this.#b.run((db, sync) => db.put(key, out, { sync }), 'write');
      return checked;
    });
  }
}
