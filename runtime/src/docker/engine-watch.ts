// Whether the Docker engine is there, noticed as it happens: a labelled event stream that ends
// when dockerd dies, a ping every few seconds (an engine that accepts and goes silent keeps the
// stream open), and any call that met a gone engine. While it is down the watch pings it twice a
// second; when it answers again the watch runs `onBack` (the manager adopts its sandboxes back),
// and every loss counts one more `epoch`, so a provision can tell an outage happened under it.
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { engineGone } from './docker-errors.ts';
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from './labels.ts';

export type EngineState = 'up' | 'down' | 'adopting';

/** How far the adoption of the sandboxes after an outage got (counts only). */
export interface AdoptionProgress {
  /** Running sandboxes to look at. */
  total: number;
  /** Looked at: brought back (started again, or still running). */
  adopted: number;
  /** Could not be brought back (they stay stopped, reason `engine`). */
  failed: number;
}

export interface EngineStatus {
  state: EngineState;
  /** When the engine was last found gone (ms since epoch); set while down or adopting. */
  downSince?: number;
  /** What happens (and what happens next), for a person; never the socket error itself. */
  message?: string;
  /** What was seen (the socket error, or the stream ending): for the operator's log, not the public. */
  cause?: string;
  /** Engine losses seen since the watch started. */
  losses: number;
  /** While adopting, and after: the adoption of the last outage. */
  adoption?: AdoptionProgress;
  /** The last outage once it is over (ms since epoch). */
  lastOutage?: { downSince: number; backAt: number; adoptedAt: number };
}

export interface EngineWatchOptions {
  log: Logger;
  /** How long a caller waits for a lost engine to return before giving up (ms). */
  waitMs: number;
  /** Runs once the engine answers again, before the state says up; reports adoption progress. */
  onBack?: (progress: (p: AdoptionProgress) => void) => Promise<void>;
  now?: () => number;
  /** Ping period while up / while down (ms). */
  upPingMs?: number;
  downPingMs?: number;
}

export class EngineWatch {
  readonly #docker: Docker;
  readonly #opts: Required<Omit<EngineWatchOptions, 'onBack'>> & Pick<EngineWatchOptions, 'onBack'>;
  #state: EngineState = 'up';
  #downSince: number | undefined;
  #why = '';
  #epoch = 0;
  #closed = true;
  #events: NodeJS.ReadableStream | undefined;
  #timer: NodeJS.Timeout | undefined;
  #back: Array<() => void> = [];
  #adoption: AdoptionProgress | undefined;
  #lastOutage: EngineStatus['lastOutage'];

  constructor(docker: Docker, opts: EngineWatchOptions) {
    this.#docker = docker;
    this.#opts = { now: Date.now, upPingMs: 5000, downPingMs: 500, ...opts };
  }

  /** Engine losses so far; a provision compares it before and after to know one happened. */
  get epoch(): number {
    return this.#epoch;
  }

  get down(): boolean {
    return this.#state === 'down';
  }

  status(): EngineStatus {
    const s: EngineStatus = {
      state: this.#state,
      losses: this.#epoch,
      ...(this.#adoption ? { adoption: { ...this.#adoption } } : {}),
      ...(this.#lastOutage ? { lastOutage: { ...this.#lastOutage } } : {}),
    };
    if (this.#state === 'up') return s;
    const since = new Date(this.#downSince ?? 0).toISOString();
    const a = this.#adoption;
    return {
      ...s,
      downSince: this.#downSince ?? 0,
      cause: this.#why,
      message:
        this.#state === 'down'
          ? `Docker engine unreachable since ${since}; creates wait for it up to ${this.#opts.waitMs} ms, then fail with ENGINE_UNAVAILABLE; running sandboxes are adopted back when it returns`
          : `Docker engine back after an outage since ${since}; adopting this operator's sandboxes (restarting their containers${a ? `: ${a.adopted + a.failed} of ${a.total} done` : ''})`,
    };
  }

  start(): void {
    if (!this.#closed) return;
    this.#closed = false;
    this.#subscribe();
    this.#schedule(this.#opts.upPingMs);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#events?.removeAllListeners();
    (this.#events as { destroy?: () => void } | undefined)?.destroy?.();
    this.#events = undefined;
    for (const f of this.#back.splice(0)) f();
  }

  /** Tells the watch about an error a Docker call met; returns whether it means the engine is gone. */
  noteError(e: unknown): boolean {
    if (!engineGone(e)) return false;
    this.#lost(describe(e));
    return true;
  }

  /** One ping now: false (and the loss noted) when the engine does not answer. */
  async confirm(): Promise<boolean> {
    if (this.#state === 'down') return false;
    return this.#docker.ping().then(
      () => true,
      (e: unknown) => {
        this.#lost(describe(e));
        return false;
      },
    );
  }

  /**
   * Resolves true once the engine answers (at once when it is up), false when it has been down
   * longer than the wait (counted from when it went down, so once an engine has been gone that
   * long, every caller fails at once) or the watch is closed.
   */
  async waitUntilBack(): Promise<boolean> {
    if (this.#state !== 'down') return true;
    const left = (this.#downSince ?? 0) + this.#opts.waitMs - this.#opts.now();
    if (left <= 0 || this.#closed) return false;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.#back = this.#back.filter((f) => f !== done);
        resolve(false);
      }, left);
      const done = () => {
        clearTimeout(timer);
        resolve(this.#state !== 'down');
      };
      this.#back.push(done);
    });
  }

  #lost(why: string): void {
    if (this.#closed || this.#state === 'down') return;
    this.#epoch++;
    this.#state = 'down';
    this.#downSince = this.#opts.now();
    this.#why = why;
    this.#opts.log.warn({ why }, 'the Docker engine is gone; waiting for it to return');
    this.#events?.removeAllListeners();
    this.#events = undefined;
    this.#schedule(this.#opts.downPingMs);
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#tick(), ms);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const ok = await this.#docker.ping().then(
      () => true,
      (e: unknown) => {
        if (this.#state === 'up') this.#lost(describe(e));
        return false;
      },
    );
    if (this.#closed) return;
    if (ok && this.#state === 'down') return this.#returned();
    this.#schedule(this.#state === 'up' ? this.#opts.upPingMs : this.#opts.downPingMs);
  }

  async #returned(): Promise<void> {
    const outage = this.#opts.now() - (this.#downSince ?? 0);
    this.#state = 'adopting';
    const backAt = this.#opts.now();
    this.#adoption = undefined;
    this.#opts.log.info({ outageMs: outage }, 'the Docker engine answers again');
    for (const f of this.#back.splice(0)) f();
    this.#subscribe();
    try {
      await this.#opts.onBack?.((p) => {
        this.#adoption = { ...p };
      });
    } catch (err) {
      this.#opts.log.error({ err: String(err) }, 'adopting sandboxes after the engine returned failed');
    }
    if (this.#state === 'adopting') {
      this.#state = 'up';
      this.#lastOutage = { downSince: this.#downSince ?? backAt, backAt, adoptedAt: this.#opts.now() };
      this.#downSince = undefined;
    }
    // Lost again while adopting: keep pinging at the down pace.
    this.#schedule(this.down ? this.#opts.downPingMs : this.#opts.upPingMs);
  }

  /** The event stream ends when dockerd dies: that is the quickest sign of a loss. */
  #subscribe(): void {
    if (this.#closed) return;
    const epoch = this.#epoch;
    this.#docker.getEvents({ filters: { label: [`${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`] } }).then(
      (stream) => {
        if (this.#closed || epoch !== this.#epoch) {
          (stream as { destroy?: () => void }).destroy?.();
          return;
        }
        this.#events = stream;
        stream.on('data', () => {});
        const ended = (why: string) => {
          if (this.#events === stream && !this.#closed) this.#lost(why);
        };
        stream.on('end', () => ended('the engine closed its event stream'));
        stream.on('error', (e: unknown) => ended(describe(e)));
      },
      (e: unknown) => {
        if (epoch === this.#epoch && this.#state !== 'down') this.#lost(describe(e));
      },
    );
  }
}

function describe(e: unknown): string {
  const x = e as { code?: unknown; message?: unknown } | undefined;
  if (typeof x?.code === 'string') return x.code === 'ENGINE_TIMEOUT' ? String(x.message) : x.code;
  return typeof x?.message === 'string' ? x.message : String(e);
}
