// dstack's RTMR event log (the `event_log` JSON of the guest agent's /GetQuote): replayed to the
// RTMRs as dstack extends them, so a verifier can trust the app facts the log names — app-id,
// compose-hash, instance-id, os-image-hash — once the replay equals the quote's signed RTMR3.
// Facts (dstack source, cc-eventlog): RTMRn starts at 48 zero bytes and each event extends it,
// mr = SHA-384(mr ‖ digest zero-padded to 48 bytes); a dstack runtime event (type 0x08000001)
// has digest SHA-384(u32le(event_type) ‖ ":" ‖ event name ‖ ":" ‖ payload bytes), which we
// recompute rather than take from the log (the lite log leaves it empty).
import { sha384 } from '@noble/hashes/sha2.js';
import { bytesEqual, concatBytes, fromHex, toHex, utf8 } from './bytes.ts';
import { AttestationError } from './errors.ts';

export const DSTACK_RUNTIME_EVENT_TYPE = 0x08000001;

export interface DstackEvent {
  imr: number;
  event_type: number;
  digest: string;
  event: string;
  event_payload: string;
}

/** The app facts of the RTMR3 runtime events (hex, as dstack writes them). */
export interface DstackAppFacts {
  app_id?: string;
  compose_hash?: string;
  instance_id?: string;
  os_image_hash?: string;
}

const bad = (m: string) => new AttestationError('BAD_INPUT', `dstack event log: ${m}`);

export function parseDstackEventLog(log: string | unknown): DstackEvent[] {
  let raw: unknown = log;
  if (typeof log === 'string') {
    try {
      raw = JSON.parse(log);
    } catch {
      throw bad('not JSON');
    }
  }
  if (!Array.isArray(raw)) throw bad('not an array of events');
  return raw.map((e, i) => {
    const o = e as Record<string, unknown>;
    if (
      !o ||
      !Number.isInteger(o.imr) ||
      (o.imr as number) < 0 ||
      (o.imr as number) > 3 ||
      !Number.isInteger(o.event_type) ||
      typeof o.digest !== 'string' ||
      typeof o.event !== 'string' ||
      typeof o.event_payload !== 'string'
    ) {
      throw bad(`event ${i} lacks imr 0-3, event_type, digest, event or event_payload`);
    }
    return o as unknown as DstackEvent;
  });
}

function runtimeDigest(e: DstackEvent): Uint8Array {
  const type = new Uint8Array(4);
  new DataView(type.buffer).setUint32(0, e.event_type, true);
  const colon = utf8(':');
  return sha384(concatBytes(type, colon, utf8(e.event), colon, fromHex(e.event_payload, 'event_payload')));
}

function eventDigest(e: DstackEvent): Uint8Array {
  if (e.event_type !== DSTACK_RUNTIME_EVENT_TYPE) {
    const d = fromHex(e.digest, 'event digest');
    if (d.length === 0 || d.length > 48) throw bad(`event of type ${e.event_type} has no usable digest`);
    return d;
  }
  const d = runtimeDigest(e);
  // A log that states a digest must state the right one: a payload edited under it is refused.
  if (e.digest && !bytesEqual(fromHex(e.digest, 'event digest'), d)) {
    throw new AttestationError(
      'MEASUREMENT',
      `dstack event "${e.event}": its digest does not match its payload`,
    );
  }
  return d;
}

/** RTMR0..3 as the log extends them (lowercase hex, 48 bytes each). */
export function replayDstackRtmrs(events: readonly DstackEvent[]): string[] {
  const mrs = [0, 1, 2, 3].map(() => new Uint8Array(48) as Uint8Array);
  for (const e of events) {
    const d = eventDigest(e);
    const padded = new Uint8Array(48);
    padded.set(d);
    mrs[e.imr] = sha384(concatBytes(mrs[e.imr]!, padded));
  }
  return mrs.map(toHex);
}

/**
 * Replays the log and checks RTMR3 against the signed one; returns the app facts it proves.
 * Throws MEASUREMENT when the log does not produce the signed RTMR3 (tampered, reordered, cut).
 */
export function checkDstackEventLog(log: string | unknown, signedRtmr3Hex: string): DstackAppFacts {
  const events = parseDstackEventLog(log);
  const rtmr3 = replayDstackRtmrs(events)[3]!;
  if (rtmr3 !== signedRtmr3Hex.toLowerCase()) {
    throw new AttestationError(
      'MEASUREMENT',
      'the dstack event log does not replay to the quote’s RTMR3: its app-id/compose-hash cannot be trusted',
    );
  }
  const facts: DstackAppFacts = {};
  const names: Record<string, keyof DstackAppFacts> = {
    'app-id': 'app_id',
    'compose-hash': 'compose_hash',
    'instance-id': 'instance_id',
    'os-image-hash': 'os_image_hash',
  };
  for (const e of events) {
    const key = names[e.event];
    if (e.imr === 3 && e.event_type === DSTACK_RUNTIME_EVENT_TYPE && key) {
      if (facts[key] !== undefined) {
        throw new AttestationError('MEASUREMENT', `the dstack event log names ${e.event} twice: refused`);
      }
      facts[key] = e.event_payload.toLowerCase();
    }
  }
  return facts;
}
