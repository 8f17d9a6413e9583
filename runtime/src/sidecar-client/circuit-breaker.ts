// Per-sandbox three-state circuit breaker: stop calling a sidecar that keeps failing, probe it once
// after a cooldown, and resume when the probe succeeds.
//
// closed ──N consecutive failures──▶ open ──cooldown elapsed──▶ half-open (exactly one probe)
//    ▲                                 ▲                              │
//    └──────────── probe succeeds ─────┼──────────────────────────────┤
//                                      └──────── probe fails ─────────┘
import { RuntimeError } from '../errors.ts';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. Default 5. */
  failureThreshold?: number;
  /** How long an open circuit refuses calls before one probe. Default 30 s. */
  cooldownMs?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
}

interface Entry {
  state: CircuitState;
  failures: number;
  openedAt: number;
  probeStartedAt: number;
  lastActivity: number;
}

/** The right to make one call; settle it exactly once. */
export interface CircuitPermit {
  readonly probe: boolean;
  success(): void;
  failure(): void;
}

export class CircuitBreaker {
  readonly failureThreshold: number;
  readonly cooldownMs: number;
  readonly #clock: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(opts: CircuitBreakerOptions = {}) {
    this.failureThreshold = opts.failureThreshold ?? 5;
    this.cooldownMs = opts.cooldownMs ?? 30_000;
    this.#clock = opts.clock ?? Date.now;
    if (!Number.isInteger(this.failureThreshold) || this.failureThreshold < 1) {
      throw new RuntimeError('CONFIG_INVALID', 'circuit breaker failureThreshold must be an integer ≥ 1');
    }
    if (!(this.cooldownMs > 0)) {
      throw new RuntimeError('CONFIG_INVALID', 'circuit breaker cooldownMs must be > 0');
    }
  }

  /**
   * Grants a call or throws CIRCUIT_OPEN (503, details.retry_after_ms). After the cooldown exactly
   * one caller gets a probe permit; others keep getting CIRCUIT_OPEN until it settles. A probe that
   * never settles is presumed lost after another cooldown, and a new probe is allowed.
   */
  acquire(key: string): CircuitPermit {
    const now = this.#clock();
    const e = this.#entries.get(key);
    if (!e || e.state === 'closed') return this.#permit(key, false);
    if (e.state === 'open') {
      const wait = e.openedAt + this.cooldownMs - now;
      if (wait > 0) throw this.#openError(key, wait);
    } else if (now - e.probeStartedAt < this.cooldownMs) {
      // half-open with a probe in flight
      throw this.#openError(key, Math.min(1000, this.cooldownMs));
    }
    e.state = 'half_open';
    e.probeStartedAt = now;
    e.lastActivity = now;
    return this.#permit(key, true);
  }

  /** Runs `fn` under the breaker. Errors for which `isFailure` is false (e.g. a 4xx) count as success. */
  async run<T>(
    key: string,
    fn: () => Promise<T>,
    isFailure: (error: unknown) => boolean = () => true,
  ): Promise<T> {
    const permit = this.acquire(key);
    try {
      const out = await fn();
      permit.success();
      return out;
    } catch (e) {
      if (isFailure(e)) permit.failure();
      else permit.success();
      throw e;
    }
  }

  /** The circuit's state for `key` (closed when unknown). */
  state(key: string): { state: CircuitState; failures: number; retry_after_ms?: number } {
    const e = this.#entries.get(key);
    if (!e) return { state: 'closed', failures: 0 };
    if (e.state === 'open') {
      const wait = Math.max(0, e.openedAt + this.cooldownMs - this.#clock());
      return { state: 'open', failures: e.failures, retry_after_ms: wait };
    }
    return { state: e.state, failures: e.failures };
  }

  /** Forgets a key (e.g. when its sandbox is deleted or recreated). */
  reset(key: string): void {
    this.#entries.delete(key);
  }

  /** Drops entries idle for more than 2× the cooldown; call every ~120 s. Returns how many. */
  prune(): number {
    const cutoff = this.#clock() - 2 * this.cooldownMs;
    let n = 0;
    for (const [k, e] of this.#entries) {
      if (e.lastActivity < cutoff) {
        this.#entries.delete(k);
        n++;
      }
    }
    return n;
  }

  get size(): number {
    return this.#entries.size;
  }

  #openError(key: string, waitMs: number): RuntimeError {
    const retry_after_ms = Math.ceil(waitMs);
    return new RuntimeError(
      'CIRCUIT_OPEN',
      `the sandbox's sidecar failed repeatedly; calls are paused, retry in ${Math.ceil(retry_after_ms / 1000)} s`,
      { details: { retry_after_ms, sandbox_id: key } },
    );
  }

  #permit(key: string, probe: boolean): CircuitPermit {
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      this.#record(key, ok, probe);
    };
    return { probe, success: () => settle(true), failure: () => settle(false) };
  }

  #record(key: string, ok: boolean, probe: boolean): void {
    const now = this.#clock();
    const e = this.#entries.get(key);
    if (ok) {
      // A success from a plain call while a probe is out does not close the circuit: only the probe
      // speaks for the sidecar's recovery. Closed and healthy needs no entry at all.
      if (probe || !e || e.state === 'closed') this.#entries.delete(key);
      return;
    }
    if (!e) {
      this.#entries.set(key, {
        state: this.failureThreshold <= 1 ? 'open' : 'closed',
        failures: 1,
        openedAt: now,
        probeStartedAt: 0,
        lastActivity: now,
      });
      return;
    }
    e.failures++;
    e.lastActivity = now;
    if (probe || (e.state === 'closed' && e.failures >= this.failureThreshold)) {
      e.state = 'open';
      e.openedAt = now;
    }
  }
}
