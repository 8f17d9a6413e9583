// Issue 29, disk full: the real store (LevelDB through `level`) on a real, small tmpfs the test
// mounts and fills. Writes are refused whole with STORE_FULL naming the directory and what to do;
// reads go on; once space returns writes resume without a restart, and after a reopen every
// acknowledged record is there and intact — the refused one absent, never half there.
// (LevelDB alone loses records written after a torn log record: they vanish at the next open.)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import { EncryptedStore } from './store.ts';

const root = process.getuid?.() === 0;
const SECRET = '5a'.repeat(32);
let mnt: string;

/** A record of about 20 kB whose content says which it is. */
const record = (i: number) => ({ i, body: `${i}:`.padEnd(20_000, String.fromCharCode(97 + (i % 26))) });

beforeAll(() => {
  if (!root) return;
  mnt = mkdtempSync(join(tmpdir(), 'store-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mnt]);
});

afterAll(() => {
  if (!root || !mnt) return;
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true, force: true });
});

describe.skipIf(!root)('the store on a full disk', () => {
  it('refuses writes whole with STORE_FULL, serves reads, and resumes writing once space returns; nothing is lost', async () => {
    const dir = join(mnt, 'store');
    let store = await EncryptedStore.open({ dir, secret: SECRET });
    let coll = store.collection<{ i: number; body: string }>('things');
    // Most of the filesystem goes to another file, as when something else fills the disk.
    const filler = join(mnt, 'filler');
    writeFileSync(filler, Buffer.alloc(2_300_000));
    const acked: number[] = [];
    let refused: unknown;
    for (let i = 0; i < 200 && !refused; i++) {
      try {
        await coll.put(`r${i}`, record(i));
        acked.push(i);
      } catch (e) {
        refused = e;
      }
    }
    expect(acked.length).toBeGreaterThan(0);
    expect(isRuntimeError(refused, 'STORE_FULL')).toBe(true);
    const message = (refused as Error).message;
    expect(message).toContain(dir);
    expect(message).toMatch(/no space left on device/);
    expect(message).toMatch(/free space on that filesystem/);
    const failedId = `r${acked.length}`;
    // While full: later writes are refused too (never appended behind the torn record) …
    await expect(coll.put('small', { i: -1, body: 'x' })).rejects.toMatchObject({ code: 'STORE_FULL' });
    // … and reads still answer.
    expect(await coll.get(`r${acked[0]}`)).toEqual(record(acked[0]!));

    // Space returns: the next write goes through, with no restart.
    rmSync(filler);
    await coll.put('after-1', record(1001));
    await coll.put('after-2', record(1002));
    acked.push(1001, 1002);

    await store.close();
    store = await EncryptedStore.open({ dir, secret: SECRET });
    coll = store.collection<{ i: number; body: string }>('things');
    for (const i of acked) {
      const id = i > 1000 ? `after-${i - 1000}` : `r${i}`;
      expect(await coll.get(id), id).toEqual(record(i));
    }
    expect(await coll.get(failedId)).toBeUndefined();
    expect(await coll.get('small')).toBeUndefined();
    expect(await coll.count()).toBe(acked.length);
    await store.close();
  });
});
