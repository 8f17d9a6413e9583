// Durable run records and their numbered events in the encrypted store, with a follower that
// replays stored events after a cursor and then tails live ones: every event once, in order.
// Bounded: per-run event and byte caps (past them one `run.truncated` event, then the stream's
// events are dropped; the end events are always kept, their text cut to a cap), and runs are
// deleted with their sandbox or once finished longer ago than the retention.
import type { StoreCollection } from '../../store/index.ts';
import type { ApiStore } from '../deps.ts';

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type RunKind = 'prompt' | 'task';

export interface RunRecord {
  run_id: string;
  sandbox_id: string;
  kind: RunKind;
  session_id: string;
  status: RunStatus;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** Id of the last stored event (events are numbered 1, 2, …). */
  last_event_id: number;
  final_text: string | null;
  usage: {
    inputTokens?: number;
    outputTokens?: number;
    cachedInputTokens?: number;
    reasoningTokens?: number;
  } | null;
  error: { code: string; message: string } | null;
}

export interface RunEvent {
  id: number;
  event: string;
  data: unknown;
  at: number;
}

export function isTerminalStatus(s: RunStatus): boolean {
  return s === 'completed' || s === 'failed' || s === 'cancelled';
}

export interface RunLimits {
  /** Stored events per run, the end events excepted. */
  maxEvents: number;
  /** Stored bytes (event JSON) per run, the end events excepted. */
  maxBytes: number;
  /** A string in an end event (final text, error message) is cut to this many characters. */
  maxTextChars: number;
  /** Finished runs older than this are deleted by sweep(). */
  retentionMs: number;
}

export const DEFAULT_RUN_LIMITS: RunLimits = {
  maxEvents: 10_000,
  maxBytes: 8 * 1024 * 1024,
  maxTextChars: 1024 * 1024,
  retentionMs: 7 * 24 * 3600_000,
};

/** Events that open or close a run: always stored (once each), never counted against the caps. */
const END_EVENTS = new Set(['run.queued', 'result', 'error', 'run.completed', 'run.failed', 'run.cancelled']);

/** Cuts long strings (top level and one level down) so an end event stays bounded. */
function capStrings(data: unknown, max: number, depth = 0): unknown {
  if (typeof data === 'string') return data.length > max ? data.slice(0, max) : data;
  if (depth > 1 || !data || typeof data !== 'object' || Array.isArray(data)) return data;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, capStrings(v, max, depth + 1)]));
}

interface LiveRun {
  record: RunRecord;
  lastSeq: number;
  /** Stream events and their bytes stored so far; past a cap the rest are dropped. */
  events: number;
  bytes: number;
  truncated: boolean;
  dropped: number;
  ends: Set<string>;
  done: boolean;
  waiters: Set<() => void>;
  /** Appends and status writes of one run happen one after another. */
  chain: Promise<void>;
}

const eventKey = (runId: string, seq: number) => `${runId}:${String(seq).padStart(10, '0')}`;

export class RunLog {
  private readonly runs: StoreCollection<RunRecord>;
  private readonly events: StoreCollection<RunEvent>;
  private readonly live = new Map<string, LiveRun>();
  readonly limits: RunLimits;

  constructor(store: ApiStore, limits: Partial<RunLimits> = {}) {
    this.runs = store.collection<RunRecord>('api_runs');
    this.events = store.collection<RunEvent>('api_run_events');
    this.limits = { ...DEFAULT_RUN_LIMITS, ...limits };
  }

  async create(record: RunRecord): Promise<void> {
    await this.runs.put(record.run_id, record);
    this.live.set(record.run_id, {
      record,
      lastSeq: record.last_event_id,
      events: 0,
      bytes: 0,
      truncated: false,
      dropped: 0,
      ends: new Set(),
      done: false,
      waiters: new Set(),
      chain: Promise.resolve(),
    });
  }

  /** The current record: the live copy while the run goes on, else the stored one. */
  async get(runId: string): Promise<RunRecord | undefined> {
    const l = this.live.get(runId);
    if (l) return { ...l.record, last_event_id: l.lastSeq };
    return (await this.runs.get(runId)) ?? undefined;
  }

  /**
   * Stores the next event of a live run; resolves with its id once it is durable. Past a cap,
   * stream events are dropped (resolving with the last stored id) after one `run.truncated`.
   */
  append(runId: string, event: string, data: unknown): Promise<number> {
    const l = this.mustLive(runId);
    return this.serial(l, async () => {
      const lim = this.limits;
      if (END_EVENTS.has(event)) {
        // Once each: a sidecar repeating `result` cannot grow the run without bound.
        if (l.ends.has(event)) return l.lastSeq;
        l.ends.add(event);
        data = capStrings(data, lim.maxTextChars);
      } else if (l.truncated) {
        l.dropped++;
        return l.lastSeq;
      } else {
        const bytes = Buffer.byteLength(JSON.stringify(data) ?? '') + event.length;
        if (l.events + 1 > lim.maxEvents || l.bytes + bytes > lim.maxBytes) {
          l.truncated = true;
          l.dropped++;
          event = 'run.truncated';
          data = {
            reason: l.events + 1 > lim.maxEvents ? 'events' : 'bytes',
            max_events: lim.maxEvents,
            max_bytes: lim.maxBytes,
            message: 'this run reached its stored-event limit; later output is dropped, the result is kept',
          };
        } else {
          l.events++;
          l.bytes += bytes;
        }
      }
      const seq = l.lastSeq + 1;
      await this.events.put(eventKey(runId, seq), { id: seq, event, data, at: Date.now() });
      // Visible to followers only after it is stored: a reader never sees a gap.
      l.lastSeq = seq;
      l.record.last_event_id = seq;
      this.wake(l);
      return seq;
    });
  }

  /** Persists a status change (and, for a terminal status, releases followers at the end). */
  update(runId: string, patch: Partial<RunRecord>): Promise<RunRecord> {
    const l = this.mustLive(runId);
    return this.serial(l, async () => {
      const next = { ...l.record, ...patch, last_event_id: l.lastSeq };
      await this.runs.put(runId, next);
      // Visible only once durable, and in the same tick as the caller's continuation (which
      // frees the sandbox's run slot): nobody sees "completed" while the slot is still taken.
      l.record = next;
      if (isTerminalStatus(l.record.status)) {
        l.done = true;
        this.live.delete(runId);
      }
      this.wake(l);
      return { ...l.record };
    });
  }

  /**
   * Every event with id > `after`, stored ones first, then live ones as they are appended, ending
   * when the run is over (or `signal` aborts). Single-threaded JS makes the check-then-wait below
   * atomic: an append between "caught up" and "waiting" cannot happen, so nothing is missed.
   */
  async *follow(runId: string, after: number, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    let cursor = Math.max(0, after);
    const l = this.live.get(runId);
    let last = l ? l.lastSeq : ((await this.runs.get(runId))?.last_event_id ?? 0);
    for (;;) {
      while (cursor < last) {
        if (signal?.aborted) return;
        cursor++;
        const ev = await this.events.get(eventKey(runId, cursor));
        if (ev) yield ev;
      }
      if (!l) return;
      if (l.lastSeq > cursor) {
        last = l.lastSeq;
        continue;
      }
      if (l.done || signal?.aborted) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal?.removeEventListener('abort', wake);
          l.waiters.delete(wake);
          resolve();
        };
        l.waiters.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
      last = l.lastSeq;
    }
  }

  /** Deletes a finished run: its record and every event. */
  async remove(runId: string): Promise<void> {
    if (this.live.has(runId)) return;
    const r = await this.runs.get(runId);
    if (!r) return;
    let last = r.last_event_id;
    while (await this.events.has(eventKey(runId, last + 1))) last++;
    const keys = Array.from({ length: last }, (_, i) => eventKey(runId, i + 1));
    for (let i = 0; i < keys.length; i += 1000) await this.events.delMany(keys.slice(i, i + 1000));
    await this.runs.del(runId);
  }

  /** Deletes every run of a sandbox that is not going on; returns how many. */
  async removeSandbox(sandboxId: string): Promise<number> {
    const mine = await this.runs.find((r) => r.sandbox_id === sandboxId);
    let n = 0;
    for (const r of mine) {
      if (this.live.has(r.run_id)) continue;
      await this.remove(r.run_id);
      n++;
    }
    return n;
  }

  /**
   * Deletes finished runs that ended before `now - retention`, and those of sandboxes `gone`
   * says no longer exist; returns how many. Runs still going on are left alone.
   */
  async sweep(now: number, gone: (sandboxId: string) => Promise<boolean> | boolean): Promise<number> {
    let n = 0;
    const cache = new Map<string, boolean>();
    for (const r of await this.runs.values()) {
      if (this.live.has(r.run_id)) continue;
      const old =
        isTerminalStatus(r.status) && (r.finished_at ?? r.created_at) < now - this.limits.retentionMs;
      let g = cache.get(r.sandbox_id);
      if (g === undefined && !old) {
        g = await gone(r.sandbox_id);
        cache.set(r.sandbox_id, g);
      }
      if (old || g) {
        await this.remove(r.run_id);
        n++;
      }
    }
    return n;
  }

  /** Runs this process was driving when it stopped: ended as failed, their stored events kept. */
  async recover(reason: string): Promise<number> {
    let n = 0;
    for (const r of await this.runs.values()) {
      if (isTerminalStatus(r.status) || this.live.has(r.run_id)) continue;
      // Events may have been stored after the record was last written: count them.
      let last = r.last_event_id;
      while (await this.events.get(eventKey(r.run_id, last + 1))) last++;
      await this.create({ ...r, last_event_id: last });
      await this.append(r.run_id, 'run.failed', { code: 'INTERRUPTED', message: reason });
      await this.update(r.run_id, {
        status: 'failed',
        finished_at: Date.now(),
        error: { code: 'INTERRUPTED', message: reason },
      });
      n++;
    }
    return n;
  }

  private mustLive(runId: string): LiveRun {
    const l = this.live.get(runId);
    if (!l) throw new Error(`run ${runId} is not live`);
    return l;
  }

  private serial<T>(l: LiveRun, fn: () => Promise<T>): Promise<T> {
    const p = l.chain.then(fn);
    l.chain = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  private wake(l: LiveRun): void {
    for (const w of [...l.waiters]) w();
  }
}
