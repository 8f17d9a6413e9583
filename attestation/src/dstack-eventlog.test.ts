// dstack RTMR replay on the real guest-agent sample (testdata/tdx/dstack_getquote_response.json):
// the log replays to all four RTMRs of its quote; RTMR3's runtime events name the app; any edit,
// cut, reorder or wrong stated digest is refused. (The sample has no collateral, so the quote's
// signature is not checked here: the RTMRs are read from its body, as the verifier reads signed ones.)
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkDstackEventLog, parseDstackEventLog, replayDstackRtmrs } from './dstack-eventlog.ts';

const sample = JSON.parse(
  readFileSync(new URL('../testdata/tdx/dstack_getquote_response.json', import.meta.url), 'utf8'),
) as { quote: string; event_log: string };
const quote = Buffer.from(sample.quote, 'hex');
/** RTMRn in a TD 1.0 quote: header 48 + body offset 328 + 48·n. */
const rtmr = (n: number) => quote.subarray(48 + 328 + 48 * n, 48 + 376 + 48 * n).toString('hex');
const events = () => JSON.parse(sample.event_log) as Array<Record<string, unknown>>;
const edit = (f: (e: Array<Record<string, unknown>>) => void) => {
  const e = events();
  f(e);
  return JSON.stringify(e);
};
const at = (e: Array<Record<string, unknown>>, name: string) => e.findIndex((x) => x.event === name);

describe('dstack event log replay (real sample)', () => {
  it('replays to the quote’s RTMR0-3 and proves the app facts of RTMR3', () => {
    expect(replayDstackRtmrs(parseDstackEventLog(sample.event_log))).toEqual([0, 1, 2, 3].map(rtmr));
    const facts = checkDstackEventLog(sample.event_log, rtmr(3));
    const payload = (name: string) => events()[at(events(), name)]!.event_payload;
    expect(facts).toEqual({
      app_id: payload('app-id'),
      compose_hash: payload('compose-hash'),
      instance_id: payload('instance-id'),
      os_image_hash: payload('os-image-hash'),
    });
    expect(facts.compose_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a tampered, cut, reordered or padded log, and a wrong stated digest', () => {
    const refused = (log: string) =>
      expect(() => checkDstackEventLog(log, rtmr(3))).toThrow(/RTMR3|digest|twice/);
    // Another compose hash (the attack: claim a different app under the same quote).
    refused(edit((e) => (e[at(e, 'compose-hash')]!.event_payload = 'ab'.repeat(32))));
    refused(edit((e) => e.splice(at(e, 'instance-id'), 1)));
    refused(
      edit((e) => {
        const i = at(e, 'app-id');
        [e[i], e[i + 1]] = [e[i + 1]!, e[i]!];
      }),
    );
    refused(edit((e) => e.push({ ...e[at(e, 'compose-hash')]!, event_payload: 'cd'.repeat(32) })));
    refused(edit((e) => (e[at(e, 'compose-hash')]!.digest = 'ee'.repeat(48))));
    // A boot-time event of RTMR3's log moved to RTMR2 changes both.
    refused(edit((e) => (e[at(e, 'system-ready')]!.imr = 2)));
    // The right log against another quote's RTMR3.
    expect(() => checkDstackEventLog(sample.event_log, rtmr(2))).toThrow(/RTMR3/);
  });

  it('says what is wrong with a malformed log', () => {
    expect(() => checkDstackEventLog('not json', rtmr(3))).toThrow(/not JSON/);
    expect(() => checkDstackEventLog('{}', rtmr(3))).toThrow(/not an array/);
    expect(() => checkDstackEventLog('[{"imr":4}]', rtmr(3))).toThrow(/imr 0-3/);
  });
});
