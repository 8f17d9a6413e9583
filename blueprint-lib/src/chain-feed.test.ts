import { describe, expect, it } from 'vitest';
import { chainFeedHealth } from './chain-feed.ts';

describe('chainFeedHealth', () => {
  it('names the outage, then the reorg recovery with its progress, and never a call id', () => {
    expect(chainFeedHealth({})).toMatchObject({ state: 'ok' });
    const down = chainFeedHealth({ unreachableSince: Date.parse('2026-12-01T23:00:00Z') });
    expect(down).toMatchObject({
      state: 'unreachable',
      unreachableSince: Date.parse('2026-12-01T23:00:00Z'),
    });
    expect(down.message).toContain('chain unreachable since 2026-12-01T23:00:00.000Z');
    const reorg = {
      at: 5,
      fork: '100',
      oldHead: '104',
      scannedTo: '102',
      vanished: ['77'],
      resent: ['78', '79'],
      recovering: true,
    };
    const rec = chainFeedHealth({ lastReorg: reorg });
    expect(rec.state).toBe('recovering');
    expect(rec.message).toContain('forked after block 100, rescanned to 102 of 104');
    expect(rec.lastReorg).toEqual({ ...reorg, vanished: 1, resent: 2 });
    expect(JSON.stringify(rec)).not.toContain('"77"');
    expect(chainFeedHealth({ lastReorg: { ...reorg, recovering: false } }).state).toBe('ok');
  });
});
