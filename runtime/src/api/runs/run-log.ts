// Durable run records and their numbered events in the encrypted store, with a follower that
// replays stored events after a cursor and then tails live ones: every event once, in order.
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
  usage: { inputTokens?: number; outputTokens?: number } | null;
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

interface LiveRun {
  record: RunRecord;
  lastSeq: number;
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

  constructor(store: ApiStore) {
    this.runs = store.collection<RunRecord>('api_runs');
    this.events = store.collection<RunEvent>('api_run_events');
  }

  async create(record: RunRecord): Promise<void> {
    await this.runs.put(record.run_id, record);
    this.live.set(record.run_id, {
      record,
      lastSeq: record.last_event_id,
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

  /** Stores the next event of a live run; resolves with its id once it is durable. */
  append(runId: string, event: string, data: unknown): Promise<number> {
    const l = this.mustLive(runId);
    return this.serial(l, async () => {
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
