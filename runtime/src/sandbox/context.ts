// What every sandbox operation shares: config, driver, the record book (encrypted store plus a
// write-through cache), provision progress, metrics, per-sandbox locks, clock and logger.
import type { Logger } from 'pino';
import type { DockerDriver } from '../docker/driver.ts';
import type { EngineWatch } from '../docker/engine-watch.ts';
import type { SandboxNetwork } from '../docker/sandbox-network.ts';
import { RuntimeError } from '../errors.ts';
import type { S3SnapshotStore } from '../snapshot-store/s3-store.ts';
import type { KeyLock } from '../store/key-lock.ts';
import type { StoreCollection, StoreWrite } from '../store/store.ts';
import type { SandboxRuntimeConfig } from './config.ts';
import type { PolicyEnforcer } from './egress-policy/enforcer.ts';
import { afterTransition } from './egress-policy/hooks.ts';
import type { SandboxMetrics } from './metrics.ts';
import type { ProvisionProgress } from './provision-progress.ts';
import { assertTransition, type SandboxRecord, type SandboxState } from './record.ts';

/**
 * Records live in the encrypted store (the only place the token and secrets are persisted); the
 * store is single-process, so an in-memory copy of every record is exact and makes reads and
 * metric gauges free of disk and decryption. A `deleted` record (a tombstone: nothing of the
 * sandbox is left) stays in the store only: kept in memory it would be one more record per
 * create/delete for the life of the process (issue 24). get/all never show it (every caller treats
 * a deleted sandbox as absent); `find` reads it from the store for whoever asks after one.
 */
export class RecordBook {
  readonly #coll: StoreCollection<SandboxRecord>;
  readonly #cache = new Map<string, SandboxRecord>();
  readonly #onChange: () => void;

  constructor(coll: StoreCollection<SandboxRecord>, onChange: () => void) {
    this.#coll = coll;
    this.#onChange = onChange;
  }

  async load(): Promise<void> {
    this.#cache.clear();
    for (const [id, r] of await this.#coll.entries()) if (r.state !== 'deleted') this.#cache.set(id, r);
    this.#onChange();
  }

  /** The record, unless there is none or it is deleted. */
  get(id: string): SandboxRecord | undefined {
    return this.#cache.get(id);
  }

  /** The record, a deleted one's tombstone included (read from the store). */
  async find(id: string): Promise<SandboxRecord | undefined> {
    return this.#cache.get(id) ?? (await this.#coll.get(id));
  }

  all(): SandboxRecord[] {
    return [...this.#cache.values()];
  }

  /** How many records are held in memory. */
  get size(): number {
    return this.#cache.size;
  }

  /** Writes the record, and with it `along` (other collections' writes), in one batch: all or none. */
  async put(r: SandboxRecord, ...along: StoreWrite[]): Promise<SandboxRecord> {
    await this.#coll.commit([this.#coll.putOp(r.id, r), ...along]);
    this.#hold(r);
    this.#onChange();
    return r;
  }

  /** Read-modify-write of one record (fn sees the latest copy); throws NOT_FOUND if absent. */
  async patch(id: string, fn: (r: SandboxRecord) => SandboxRecord): Promise<SandboxRecord> {
    const out = await this.#coll.update(id, (cur) => {
      if (!cur) throw new RuntimeError('NOT_FOUND', `sandbox ${id} does not exist`);
      return fn(cur);
    });
    if (!out) throw new RuntimeError('NOT_FOUND', `sandbox ${id} does not exist`);
    this.#hold(out);
    this.#onChange();
    return out;
  }

  #hold(r: SandboxRecord): void {
    if (r.state === 'deleted') this.#cache.delete(r.id);
    else this.#cache.set(r.id, r);
  }
}

export interface SandboxContext {
  cfg: SandboxRuntimeConfig;
  driver: DockerDriver;
  /** Whether the engine is there; a provision the engine's loss cut short waits on it. */
  engine: EngineWatch;
  /** The network sandboxes join (set when the manager opens, from the egress policy). */
  network: SandboxNetwork;
  /** Per-sandbox network policies (egress-policy/), set up when the first policed sandbox needs it. */
  policy?: PolicyEnforcer | undefined;
  records: RecordBook;
  /** Where cold tiers and snapshots go besides local disk (SNAPSHOT_S3_*); undefined: local only. */
  objects?: S3SnapshotStore | undefined;
  provisions: StoreCollection<ProvisionProgress>;
  metrics: SandboxMetrics | undefined;
  locks: KeyLock;
  now: () => number;
  log: Logger;
}

/** Moves a record to `state` (checked against the state machine) with other field changes. */
export function transition(
  ctx: SandboxContext,
  id: string,
  state: SandboxState,
  changes: Partial<SandboxRecord> = {},
): Promise<SandboxRecord> {
  return ctx.records
    .patch(id, (r) => {
      assertTransition(id, r.state, state);
      return { ...r, ...changes, state, updatedAt: ctx.now() };
    })
    .then(async (r) => {
      await afterTransition(ctx, r);
      return r;
    });
}

/** The record, or NOT_FOUND (a deleted sandbox is gone to every caller). */
export function mustGet(ctx: SandboxContext, id: string): SandboxRecord {
  const r = ctx.records.get(id);
  if (!r || r.state === 'deleted') {
    throw new RuntimeError('NOT_FOUND', `sandbox ${id} does not exist`);
  }
  return r;
}
