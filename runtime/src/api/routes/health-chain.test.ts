// /health and the job feed: degraded while the chain RPC is unreachable (checks.chain error at once,
// whatever the cached check says) and while a reorg is recovered from; counts only, for anyone.
import { afterEach, describe, expect, it } from 'vitest';
import type { ChainFeedHealth } from '../deps.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('/health and the chain feed', () => {
  it('says degraded, chain unreachable, while the feed says so; ok again after', async () => {
    let feed: ChainFeedHealth = { state: 'ok', message: 'following the chain' };
    h = await startHarness({
      deps: { health: { chain: () => 1n, store: () => true, runtime: () => true }, chainFeed: () => feed },
    });
    const ok = await h.call('GET', '/health');
    expect(ok.status).toBe(200);
    expect(ok.json.chainFeed.state).toBe('ok');
    feed = {
      state: 'unreachable',
      message: 'chain unreachable since 2026-12-01T23:00:00.000Z',
      unreachableSince: 1,
    };
    const down = await h.call('GET', '/health');
    expect(down.status).toBe(503);
    expect(down.json).toMatchObject({
      status: 'degraded',
      checks: { chain: 'error' },
      chainFeed: { state: 'unreachable', message: expect.stringContaining('chain unreachable since') },
    });
    feed = {
      state: 'recovering',
      message: 'recovering from a reorg',
      lastReorg: {
        at: 2,
        fork: '10',
        oldHead: '12',
        scannedTo: '11',
        vanished: 1,
        resent: 0,
        recovering: true,
      },
    };
    const rec = await h.call('GET', '/health');
    expect(rec.status).toBe(503);
    expect(rec.json.checks.chain).toBe('ok');
    expect(rec.json.chainFeed.lastReorg).toMatchObject({ fork: '10', scannedTo: '11', vanished: 1 });
  });
});
