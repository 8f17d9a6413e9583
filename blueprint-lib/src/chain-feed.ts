// What /health says of the job feed: the job runner's chain status (RPC unreachable since when, the
// last reorg and its rescan) as the runtime's public ChainFeedHealth — counts, never call ids.
import type { ChainFeedHealth } from '@agent-sandbox/runtime';
import type { ChainStatus } from '@agent-sandbox/sdk';

export function chainFeedHealth(s: ChainStatus): ChainFeedHealth {
  const r = s.lastReorg;
  const lastReorg = r && {
    at: r.at,
    fork: r.fork,
    oldHead: r.oldHead,
    scannedTo: r.scannedTo,
    vanished: r.vanished.length,
    resent: r.resent.length,
    recovering: r.recovering,
  };
  const withReorg = lastReorg ? { lastReorg } : {};
  if (s.unreachableSince !== undefined)
    return {
      state: 'unreachable',
      message: `chain unreachable since ${new Date(s.unreachableSince).toISOString()}; jobs wait, and are caught up from the cursor once it answers`,
      unreachableSince: s.unreachableSince,
      ...withReorg,
    };
  if (r?.recovering)
    return {
      state: 'recovering',
      message:
        `recovering from a reorg at ${new Date(r.at).toISOString()}: forked after block ${r.fork}, ` +
        `rescanned to ${r.scannedTo} of ${r.oldHead}; ${r.vanished.length} call(s) removed and undone, ` +
        `${r.resent.length} result(s) sent again`,
      ...withReorg,
    };
  return { state: 'ok', message: 'following the chain', ...withReorg };
}
