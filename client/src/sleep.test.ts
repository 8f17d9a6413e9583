// The polling loops' wait (create's progress, the chain's receipts): it ends early on abort and
// leaves no listener on the caller's signal once over. A create polls every 500 ms on the CLI's one
// signal: leftover listeners piled up for the command's life and, past ten, Node printed a
// MaxListenersExceededWarning into the create's output.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from './sleep.ts';

describe('sleep', () => {
  it('a loop of waits on one signal leaves no abort listener behind, and Node warns of none', async () => {
    const ac = new AbortController();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 20; i++) await sleep(1, ac.signal);
      // Node emits the warning on the next tick after the 11th listener.
      await new Promise((r) => setImmediate(r));
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
      expect(warnings.filter((w) => w.includes('MaxListeners'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('ends at once when the signal aborts, and at once when it already had', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const waiting = sleep(60_000, ac.signal);
    ac.abort();
    await waiting;
    await sleep(60_000, ac.signal);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
