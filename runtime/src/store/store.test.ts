// Tests of the encrypted store against a real LevelDB on disk.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isRuntimeError, type RuntimeError } from '../errors.ts';
import { EncryptedStore } from './store.ts';

const SECRET = randomBytes(32).toString('hex');
const OTHER_SECRET = randomBytes(32).toString('hex');

let dir: string;
const open: EncryptedStore[] = [];

async function openStore(secret = SECRET): Promise<EncryptedStore> {
  const s = await EncryptedStore.open({ dir, secret });
  open.push(s);
  return s;
}

async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<RuntimeError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (isRuntimeError(e)) return e;
    throw e;
  }
  throw new Error('expected a RuntimeError, got success');
}

/** Every file under `root`, recursively, as bytes. */
async function allFiles(root: string): Promise<Array<{ path: string; bytes: Buffer }>> {
  const out: Array<{ path: string; bytes: Buffer }> = [];
  for (const e of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    out.push({ path, bytes: await readFile(path) });
  }
  return out;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'store-test-'));
});

afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await rm(dir, { recursive: true, force: true });
});

const Sandbox = z.object({ id: z.string(), owner: z.string(), cpu: z.number().int().positive() });
type Sandbox = z.infer<typeof Sandbox>;

describe('EncryptedStore', () => {
  it('round-trips records through every collection operation', async () => {
    const store = await openStore();
    const boxes = store.collection<Sandbox>('sandboxes', Sandbox);
    expect(await boxes.get('a')).toBeUndefined();
    await boxes.put('a', { id: 'a', owner: '0xabc', cpu: 1 });
    await boxes.putMany([
      ['b', { id: 'b', owner: '0xabc', cpu: 2 }],
      ['c', { id: 'c', owner: '0xdef', cpu: 4 }],
    ]);
    expect(await boxes.get('a')).toEqual({ id: 'a', owner: '0xabc', cpu: 1 });
    expect(await boxes.has('b')).toBe(true);
    expect(await boxes.count()).toBe(3);
    expect(new Map(await boxes.entries()).get('c')).toEqual({ id: 'c', owner: '0xdef', cpu: 4 });
    expect((await boxes.values()).map((v) => v.id).sort()).toEqual(['a', 'b', 'c']);
    expect((await boxes.find((v) => v.owner === '0xabc')).map((v) => v.id).sort()).toEqual(['a', 'b']);
    await boxes.del('a');
    await boxes.delMany(['b']);
    expect(await boxes.get('a')).toBeUndefined();
    expect((await boxes.entries()).map(([id]) => id)).toEqual(['c']);
    // Collections are separate namespaces even for the same id.
    const other = store.collection<string>('other');
    await other.put('c', 'not a sandbox');
    expect(await other.get('c')).toBe('not a sandbox');
    expect(await boxes.count()).toBe(1);
  });

  it('rejects a value that does not match the schema, and writes nothing', async () => {
    const store = await openStore();
    const boxes = store.collection<Sandbox>('sandboxes', Sandbox);
    const err = await errorOf(boxes.put('x', { id: 'x', owner: '0x1', cpu: -1 }));
    expect(err.code).toBe('VALIDATION');
    expect(err.message).toContain('cpu');
    expect(await boxes.get('x')).toBeUndefined();
    const err2 = await errorOf(boxes.putMany([['y', { id: 'y', owner: 1 } as unknown as Sandbox]]));
    expect(err2.code).toBe('VALIDATION');
    expect(await boxes.count()).toBe(0);
  });

  it('rejects bad collection names and ids', async () => {
    const store = await openStore();
    expect((await errorOf(() => store.collection('_meta'))).code).toBe('VALIDATION');
    expect((await errorOf(() => store.collection('a!b'))).code).toBe('VALIDATION');
    const c = store.collection<number>('nums');
    expect((await errorOf(c.put('', 1))).code).toBe('VALIDATION');
    expect((await errorOf(c.get('x'.repeat(1025)))).code).toBe('VALIDATION');
  });

  it('keeps records across close and reopen', async () => {
    let store = await openStore();
    await store.collection<number[]>('lists').put('k', [1, 2, 3]);
    await store.close();
    store = await openStore();
    expect(await store.collection<number[]>('lists').get('k')).toEqual([1, 2, 3]);
  });

  it('refuses to open under another secret, and the data survives for the right one', async () => {
    const store = await openStore();
    await store.collection<string>('things').put('k', 'v');
    await store.close();
    const err = await errorOf(EncryptedStore.open({ dir, secret: OTHER_SECRET }));
    expect(err.code).toBe('STORE_KEY_MISMATCH');
    expect(err.message).not.toContain(OTHER_SECRET);
    expect(err.message).not.toContain(SECRET);
    const again = await openStore();
    expect(await again.collection<string>('things').get('k')).toBe('v');
  });

  it('rejects a malformed SESSION_AUTH_SECRET with a clear error that does not echo it', async () => {
    for (const bad of ['', 'abc', 'zz'.repeat(32), SECRET.slice(2), `${SECRET}00`]) {
      const err = await errorOf(EncryptedStore.open({ dir, secret: bad }));
      expect(err.code).toBe('CONFIG_INVALID');
      expect(err.message).toContain('64 hex');
      if (bad.length > 3) expect(err.message).not.toContain(bad);
    }
    // 0x prefix is accepted.
    const s = await EncryptedStore.open({ dir, secret: `0x${SECRET}` });
    open.push(s);
  });

  it('fails loudly on a tampered value, in get and in listings', async () => {
    const store = await openStore();
    const c = store.collection<{ n: number }>('recs');
    await c.put('a', { n: 1 });
    await c.put('b', { n: 2 });
    await store.close();
    // Flip one ciphertext byte of one record directly in LevelDB.
    const raw = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
    const recKeys = (await raw.keys().all()).filter((k) => k.startsWith('recs!'));
    expect(recKeys).toHaveLength(2);
    const victim = recKeys[0] as string;
    const value = Uint8Array.from((await raw.get(victim)) as Uint8Array);
    value[value.length - 20] = (value[value.length - 20] as number) ^ 0x01;
    await raw.put(victim, value);
    await raw.close();

    const again = await openStore();
    const rc = again.collection<{ n: number }>('recs');
    const results = await Promise.allSettled([rc.get('a'), rc.get('b')]);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as RuntimeError).code).toBe('STORE_CORRUPT');
    expect((await errorOf(rc.values())).code).toBe('STORE_CORRUPT');
  });

  it('fails when a sealed value is moved under another key', async () => {
    const store = await openStore();
    const c = store.collection<string>('roles');
    await c.put('alice', 'admin');
    await c.put('mallory', 'guest');
    await store.close();
    const raw = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
    const [k1, k2] = (await raw.keys().all()).filter((k) => k.startsWith('roles!')) as [string, string];
    const v1 = (await raw.get(k1)) as Uint8Array;
    const v2 = (await raw.get(k2)) as Uint8Array;
    await raw.batch([
      { type: 'put', key: k1, value: v2 },
      { type: 'put', key: k2, value: v1 },
    ]);
    await raw.close();
    const again = await openStore();
    expect((await errorOf(again.collection<string>('roles').get('mallory'))).code).toBe('STORE_CORRUPT');
  });

  it('refuses a directory that holds data but no key check record', async () => {
    const raw = new Level<string, string>(dir);
    await raw.put('sandboxes!x', 'something');
    await raw.close();
    expect((await errorOf(EncryptedStore.open({ dir, secret: SECRET }))).code).toBe('STORE_KEY_MISMATCH');
  });

  it('reports a store held by another opener as unavailable', async () => {
    await openStore();
    const err = await errorOf(EncryptedStore.open({ dir, secret: SECRET }));
    expect(err.code).toBe('STORE_UNAVAILABLE');
  });

  it('fails operations on a closed store cleanly', async () => {
    const store = await openStore();
    const c = store.collection<number>('nums');
    await store.close();
    expect((await errorOf(c.get('a'))).code).toBe('STORE_UNAVAILABLE');
    expect((await errorOf(c.put('a', 1))).code).toBe('STORE_UNAVAILABLE');
  });

  it('serializes concurrent updates of one key', async () => {
    const store = await openStore();
    const counters = store.collection<number>('counters');
    const N = 200;
    await Promise.all(
      Array.from({ length: N }, async (_, i) =>
        counters.update('hits', async (cur) => {
          // Yield between read and write so unserialized updates would interleave and lose counts.
          await new Promise((r) => setTimeout(r, i % 3));
          return (cur ?? 0) + 1;
        }),
      ),
    );
    expect(await counters.get('hits')).toBe(N);
  });

  it('update deletes on undefined, survives a throwing updater, and serializes with put', async () => {
    const store = await openStore();
    const c = store.collection<number>('c');
    await c.put('k', 1);
    const failing = c.update('k', () => {
      throw new Error('updater failed');
    });
    const putAfter = c.put('k', 5);
    const next = c.update('k', (cur) => (cur ?? 0) + 1);
    await expect(failing).rejects.toThrow('updater failed');
    await putAfter;
    expect(await next).toBe(6);
    expect(await c.update('k', () => undefined)).toBeUndefined();
    expect(await c.has('k')).toBe(false);
  });

  it('leaves no token, secret or id in plaintext anywhere on disk', async () => {
    const token = `v4.local.${randomBytes(48).toString('base64url')}`;
    const apiKey = `sk-test-${randomBytes(24).toString('hex')}`;
    const sandboxId = `sandbox-${randomBytes(8).toString('hex')}`;
    const store = await openStore();
    const c = store.collection<Record<string, unknown>>('sandboxes');
    // Enough records to push LevelDB past its write-ahead log into table files too.
    for (let i = 0; i < 50; i++) {
      await c.put(i === 0 ? sandboxId : `filler-${i}`, {
        token,
        env: { OPENAI_API_KEY: apiKey },
        pad: 'x'.repeat(2000),
      });
    }
    await store.collection<string>('revoked').put(token, 'revoked');
    await store.close();

    const needles: Array<[string, Buffer]> = [];
    for (const s of [token, apiKey, sandboxId]) {
      needles.push([`${s} (utf8)`, Buffer.from(s)]);
      needles.push([`${s} (hex)`, Buffer.from(Buffer.from(s).toString('hex'))]);
      needles.push([`${s} (base64)`, Buffer.from(Buffer.from(s).toString('base64'))]);
      needles.push([`${s} (base64url)`, Buffer.from(Buffer.from(s).toString('base64url'))]);
      needles.push([`${s} (utf16le)`, Buffer.from(s, 'utf16le')]);
    }
    needles.push(['secret hex', Buffer.from(SECRET)]);
    needles.push(['secret bytes', Buffer.from(SECRET, 'hex')]);
    const files = await allFiles(dir);
    expect(files.length).toBeGreaterThan(2);
    expect(files.reduce((n, f) => n + f.bytes.length, 0)).toBeGreaterThan(50 * 2000);
    for (const f of files) {
      for (const [label, needle] of needles) {
        expect(f.bytes.includes(needle), `${label} found in ${f.path}`).toBe(false);
      }
    }
    // And the data is all still there.
    const again = await openStore();
    expect((await again.collection<{ token: string }>('sandboxes').get(sandboxId))?.token).toBe(token);
  });
});
