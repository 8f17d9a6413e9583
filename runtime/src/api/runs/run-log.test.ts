import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EncryptedStore } from '../../store/index.ts';
import { TEST_SECRET } from '../testing/harness.ts';
import { type RunEvent, RunLog, type RunRecord } from './run-log.ts';

const record = (id: string): RunRecord => ({
  run_id: id,
  sandbox_id: 'sbx-1',
  kind: 'prompt',
  session_id: 'ses-1',
  status: 'running',
  created_at: 1,
  started_at: 1,
  finished_at: null,
  last_event_id: 0,
  final_text: null,
  usage: null,
  error: null,
});

async function collect(it: AsyncIterable<RunEvent>): Promise<number[]> {
  const ids: number[] = [];
  for await (const e of it) ids.push(e.id);
  return ids;
}

describe('RunLog', () => {
  let dir: string;
  let store: EncryptedStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'runlog-'));
    store = await EncryptedStore.open({ dir, secret: TEST_SECRET });
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a follower from any cursor gets every later event exactly once while appends race it', async () => {
    const log = new RunLog(store);
    await log.create(record('r1'));
    for (let i = 0; i < 5; i++) await log.append('r1', 'e', { i });
    // Followers start at different cursors while 45 more events are appended concurrently.
    const followers = [0, 2, 5, 17].map((after) => collect(log.follow('r1', after)));
    const writer = (async () => {
      for (let i = 5; i < 50; i++) {
        await log.append('r1', 'e', { i });
        if (i % 7 === 0) await new Promise((r) => setTimeout(r, 1));
      }
      await log.update('r1', { status: 'completed' });
    })();
    const [a, b, c, d] = await Promise.all([...followers, writer]);
    const range = (from: number) => Array.from({ length: 50 - from }, (_, k) => from + k + 1);
    expect(a).toEqual(range(0));
    expect(b).toEqual(range(2));
    expect(c).toEqual(range(5));
    expect(d).toEqual(range(17));
  });

  it('after the run ended, a follower replays what is stored and ends', async () => {
    const log = new RunLog(store);
    await log.create(record('r2'));
    await log.append('r2', 'a', 1);
    await log.append('r2', 'b', 2);
    await log.update('r2', { status: 'failed' });
    expect(await collect(log.follow('r2', 0))).toEqual([1, 2]);
    expect(await collect(log.follow('r2', 1))).toEqual([2]);
    expect(await collect(log.follow('r2', 2))).toEqual([]);
    expect(await collect(log.follow('nope', 0))).toEqual([]);
  });

  it('events and records survive a restart; unfinished runs are recorded as interrupted', async () => {
    const log = new RunLog(store);
    await log.create(record('r3'));
    await log.append('r3', 'a', { x: 1 });
    await log.append('r3', 'b', { x: 2 }); // record not rewritten since: recovery must count it
    await store.close();
    store = await EncryptedStore.open({ dir, secret: TEST_SECRET });
    const again = new RunLog(store);
    expect(await again.recover('restarted')).toBe(1);
    const r = await again.get('r3');
    expect(r?.status).toBe('failed');
    expect(r?.error?.code).toBe('INTERRUPTED');
    const events: RunEvent[] = [];
    for await (const e of again.follow('r3', 0)) events.push(e);
    expect(events.map((e) => [e.id, e.event])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'run.failed'],
    ]);
    expect(await again.recover('again')).toBe(0);
  });

  it('a follower stops when its signal aborts', async () => {
    const log = new RunLog(store);
    await log.create(record('r4'));
    const ac = new AbortController();
    const p = collect(log.follow('r4', 0, ac.signal));
    await log.append('r4', 'a', 1);
    setTimeout(() => ac.abort(), 20);
    expect(await p).toEqual([1]);
  });

  it('caps stream events by count and bytes, keeps each end event once with its text cut', async () => {
    const log = new RunLog(store, { maxEvents: 10, maxBytes: 1_000_000, maxTextChars: 100 });
    await log.create(record('c1'));
    await log.append('c1', 'run.queued', { run_id: 'c1' });
    for (let i = 0; i < 500; i++) await log.append('c1', 'message.part.updated', { i });
    await log.append('c1', 'result', { finalText: 'x'.repeat(5000), response: 'y'.repeat(5000) });
    await log.append('c1', 'result', { finalText: 'again' });
    await log.append('c1', 'run.completed', { final_text: 'z'.repeat(5000) });
    await log.update('c1', { status: 'completed' });
    const events: RunEvent[] = [];
    for await (const e of log.follow('c1', 0)) events.push(e);
    expect(events.map((e) => e.event)).toEqual([
      'run.queued',
      ...Array(10).fill('message.part.updated'),
      'run.truncated',
      'result',
      'run.completed',
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events[11]!.data).toMatchObject({ reason: 'events', max_events: 10 });
    expect((events[12]!.data as { finalText: string }).finalText).toBe('x'.repeat(100));
    expect((events[13]!.data as { final_text: string }).final_text).toHaveLength(100);

    const bytes = new RunLog(store, { maxEvents: 1000, maxBytes: 2_000 });
    await bytes.create(record('c2'));
    for (let i = 0; i < 100; i++) await bytes.append('c2', 'message.part.updated', { text: 'a'.repeat(100) });
    await bytes.update('c2', { status: 'completed' });
    const got: RunEvent[] = [];
    for await (const e of bytes.follow('c2', 0)) got.push(e);
    const stored = got.filter((e) => e.event !== 'run.truncated');
    expect(
      stored.reduce((n, e) => n + JSON.stringify(e.data).length + e.event.length, 0),
    ).toBeLessThanOrEqual(2_000);
    expect(got.at(-1)!.data).toMatchObject({ reason: 'bytes' });
  });

  it("sweeps runs past retention and runs of gone sandboxes; removes a sandbox's runs", async () => {
    const log = new RunLog(store, { retentionMs: 1_000 });
    const mk = async (id: string, sandbox: string, finishedAt: number | null) => {
      await log.create({ ...record(id), sandbox_id: sandbox });
      await log.append(id, 'e', { id });
      await log.update(id, finishedAt === null ? {} : { status: 'completed', finished_at: finishedAt });
    };
    const now = 10_000;
    await mk('old', 'sbx-a', now - 5_000);
    await mk('fresh', 'sbx-a', now - 10);
    await mk('live', 'sbx-a', null);
    await mk('orphan', 'sbx-gone', now - 10);
    await mk('mine1', 'sbx-b', now - 10);
    await mk('mine2', 'sbx-b', now - 20);
    const gone = (id: string) => id === 'sbx-gone';
    expect(await log.sweep(now, gone)).toBe(2);
    expect(await log.get('old')).toBeUndefined();
    expect(await log.get('orphan')).toBeUndefined();
    expect(await log.get('fresh')).toBeDefined();
    expect(await log.get('live')).toBeDefined();
    expect(await log.removeSandbox('sbx-b')).toBe(2);
    expect(await log.get('mine1')).toBeUndefined();
    const left = (await store.collection<RunEvent>('api_run_events').entries()).map(([k]) => k.split(':')[0]);
    expect(new Set(left)).toEqual(new Set(['fresh', 'live']));
  });
});
