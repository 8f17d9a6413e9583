import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSdkError } from './errors.ts';
import { JobCursor } from './job-cursor.ts';

const id = { chainId: 31337, tangle: '0x5FbDB2315678afecb367f032d93F642f64180aa3' as const, serviceId: 4n };
const pos = (block: bigint, logIndex: number) => ({ block, logIndex });

describe('JobCursor', () => {
  it('starts at the start block, persisted immediately', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    const c = await JobCursor.open(dir, id, async () => 100n);
    expect(c.position).toEqual(pos(100n, 0));
    const again = await JobCursor.open(dir, id, async () => 999n);
    expect(again.position).toEqual(pos(100n, 0));
  });

  it('advances only past finished events, keeps finished ones above the cursor, and survives a reopen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    const c = await JobCursor.open(dir, id, async () => 10n);
    c.begin(1n, pos(10n, 0));
    c.begin(2n, pos(10n, 3));
    c.begin(3n, pos(12n, 1));
    c.scanned(12n);
    expect(c.position).toEqual(pos(10n, 0));
    await c.finish(2n); // a later one finishes first: cursor stays, 2 is remembered as done
    expect(c.position).toEqual(pos(10n, 0));
    expect(c.isFinished(2n, pos(10n, 3))).toBe(true);
    expect(c.isFinished(1n, pos(10n, 0))).toBe(false);

    // "kill -9" now: a fresh process sees 1 and 3 unfinished, 2 finished.
    const r = await JobCursor.open(dir, id, async () => 0n);
    expect(r.position).toEqual(pos(10n, 0));
    expect([1n, 2n, 3n].map((n, i) => r.isFinished(n, [pos(10n, 0), pos(10n, 3), pos(12n, 1)][i]!))).toEqual([
      false,
      true,
      false,
    ]);

    await c.finish(1n);
    expect(c.position).toEqual(pos(12n, 1)); // lowest unfinished
    await c.finish(3n);
    expect(c.position).toEqual(pos(13n, 0)); // past the last scanned block
    const file = JSON.parse(await readFile(c.path, 'utf8'));
    // Kept below the cursor for RECENT_BLOCKS blocks, so a reorg there finds what was done.
    expect(file.done.map((d: { callId: string }) => d.callId).sort()).toEqual(['1', '2', '3']);
    expect(file.cursor).toEqual({ block: '13', logIndex: 0 });
  });

  it('writes a cursor move from scanning alone lazily, and finished calls at once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    const c = await JobCursor.open(dir, id, async () => 1n);
    c.lazyPersistMs = 20;
    c.scanned(5n);
    expect((await JobCursor.open(dir, id, async () => 0n)).position).toEqual(pos(1n, 0));
    // The lazy write lands on its own (no other write follows): poll the file, not a fixed sleep.
    const t0 = Date.now();
    while ((await JobCursor.open(dir, id, async () => 0n)).position.block !== 6n) {
      if (Date.now() - t0 > 10_000) throw new Error('the lazy cursor write never landed');
      await new Promise((r) => setTimeout(r, 10));
    }
  });

  it('persists pending result transactions with their calls', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    const c = await JobCursor.open(dir, id, async () => 1n);
    const tx = {
      hash: `0x${'aa'.repeat(32)}` as const,
      raw: '0x02ff' as const,
      nonce: 7,
      calls: [{ callId: 5n, pos: pos(3n, 2) }],
    };
    await c.addPending(tx);
    const r = await JobCursor.open(dir, id, async () => 1n);
    expect(r.pendingTxs).toEqual([tx]);
    expect(r.isPending(5n)).toBe(true);
    await r.removePending(tx.hash);
    expect((await JobCursor.open(dir, id, async () => 1n)).pendingTxs).toEqual([]);
  });

  it('coalesces many concurrent writes and every one of them is durable when it resolves', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    const c = await JobCursor.open(dir, id, async () => 1n);
    for (let i = 0; i < 50; i++) c.begin(BigInt(i), pos(1n, i));
    c.scanned(1n);
    await Promise.all(Array.from({ length: 50 }, (_, i) => c.finish(BigInt(i))));
    const r = await JobCursor.open(dir, id, async () => 0n);
    expect(r.position).toEqual(pos(2n, 0));
  });

  it('refuses a corrupt file and a file of another service with CURSOR errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-cursor-'));
    await writeFile(JobCursor.fileFor(dir, id), '{"version":1,');
    await expect(JobCursor.open(dir, id, async () => 0n)).rejects.toSatisfy((e) => isSdkError(e, 'CURSOR'));
    const c = await JobCursor.open(dir, { ...id, serviceId: 5n }, async () => 0n);
    await writeFile(JobCursor.fileFor(dir, id), await readFile(c.path, 'utf8'));
    await expect(JobCursor.open(dir, id, async () => 0n)).rejects.toThrow(/another chain/);
  });
});
