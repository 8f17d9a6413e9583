// The cron loop: one timer armed for the earliest due slot (re-armed at least every `maxSleepMs`, so
// a workflow created meanwhile or a clock step is noticed), one tick at a time. The clock is
// injectable: tests drive `now` and the timer; the operator uses the real ones.
import type { Logger } from 'pino';
import type { WorkflowRunRecord } from './records.ts';
import type { WorkflowService } from './workflow-service.ts';

export interface SchedulerClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const realClock: SchedulerClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

export class WorkflowScheduler {
  private timer: unknown;
  private running = false;
  private ticking: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly service: Pick<WorkflowService, 'tick' | 'nextDue'>,
    private readonly logger: Logger,
    private readonly clock: SchedulerClock = realClock,
    private readonly maxSleepMs = 30_000,
    /** Called after each tick with what it fired (tests and metrics). */
    private readonly onTick?: (fired: WorkflowRunRecord[]) => void,
  ) {}

  /** Starts the loop: a tick now (catch-up after a restart), then one per due slot. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.wake();
  }

  /** Re-arms the timer now (after a workflow is created or canceled). */
  poke(): void {
    if (this.running) this.wake();
  }

  /** Stops the loop; resolves once a tick going on has finished. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  private wake(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.ticking = this.ticking.then(() => this.tickAndArm());
  }

  private async tickAndArm(): Promise<void> {
    if (!this.running) return;
    let next: number | null = null;
    try {
      const fired = await this.service.tick(this.clock.now());
      if (fired.length) this.onTick?.(fired);
      next = await this.service.nextDue();
    } catch (e) {
      this.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'workflow tick failed; retrying');
    }
    if (!this.running) return;
    const wait =
      next === null ? this.maxSleepMs : Math.min(Math.max(next - this.clock.now(), 0), this.maxSleepMs);
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.wake();
    }, wait);
  }
}
