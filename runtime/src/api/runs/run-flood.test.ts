// A run flooded with agent output, end to end on real parts: the real sidecar (in-process, real
// HTTP, a real agent process), the real SidecarClient and RunService, and the encrypted LevelDB
// store. The store on disk stays under the stated bound: maxBytes of stream events, plus the end
// events and the record (each holding the final text at most maxTextChars), plus 1 MiB of slack.
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SidecarFixture, startSidecarFixture } from '@agent-sandbox/sidecar/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SidecarClient } from '../../sidecar-client/index.ts';
import { EncryptedStore } from '../../store/index.ts';
import { TEST_SECRET } from '../testing/harness.ts';
import { type RunEvent, RunLog } from './run-log.ts';
import { RunService } from './run-service.ts';

const LIMITS = { maxEvents: 2_000, maxBytes: 256 * 1024, maxTextChars: 128 * 1024 };
const MiB = 1024 * 1024;

async function dirBytes(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? await dirBytes(p) : (await stat(p)).size;
  }
  return n;
}

let fx: SidecarFixture;
let dir: string;
let store: EncryptedStore;
beforeAll(async () => {
  // ~2.4 MB of output in many writes (the sidecar keeps its 1 MiB output cap): many part events,
  // far more bytes than the operator's (test-sized) per-run caps allow.
  fx = await startSidecarFixture({
    SIDECAR_AGENT_COMMAND: 'for i in $(seq 1 20); do seq 1 22000; sleep 0.02; done',
  });
  dir = await mkdtemp(join(tmpdir(), 'run-flood-'));
  store = await EncryptedStore.open({ dir, secret: TEST_SECRET });
});
afterAll(async () => {
  await store?.close();
  await fx?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a flooded run', () => {
  it('keeps its stored events and the store on disk under the stated bound, and still ends completed', {
    timeout: 120_000,
  }, async () => {
    const log = new RunLog(store, LIMITS);
    const client = new SidecarClient({ sandboxId: 'sbx-flood', baseUrl: fx.sidecar.url, token: fx.token });
    const service = new RunService(log, { client: async () => client }, pino({ level: 'silent' }));
    const before = await dirBytes(dir);
    const run = await service.start({
      sandboxId: 'sbx-flood',
      kind: 'prompt',
      request: { message: 'flood' },
      timeoutMs: 100_000,
      requestId: 'req-flood',
    });
    const events: RunEvent[] = [];
    for await (const ev of log.follow(run.run_id, 0)) events.push(ev);
    const rec = await log.get(run.run_id);
    expect(rec?.error ?? null).toBeNull();
    expect(rec?.status).toBe('completed');
    expect(rec?.final_text?.length).toBe(LIMITS.maxTextChars);
    const names = events.map((e) => e.event);
    expect(names).toContain('run.truncated');
    expect(names.slice(-2)).toEqual(['result', 'run.completed']);
    // Ids stay gapless: the dropped events were never numbered.
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    const stream = events.filter((e) => !['result', 'run.completed', 'run.queued'].includes(e.event));
    const streamBytes = stream.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.data)), 0);
    expect(streamBytes).toBeLessThanOrEqual(LIMITS.maxBytes);
    const bound = LIMITS.maxBytes + 4 * LIMITS.maxTextChars + MiB;
    const grown = (await dirBytes(dir)) - before;
    expect(grown).toBeLessThanOrEqual(bound);
    // And it is all gone with the sandbox.
    expect(await service.forgetSandbox('sbx-flood')).toBe(1);
    expect(await log.get(run.run_id)).toBeUndefined();
    expect(await store.collection('api_run_events').count()).toBe(0);
  });
});
