// Provision progress for a create job, keyed by its call id and persisted: queued -> image_pull
// -> container_create -> container_start -> health_check -> ready | failed, each with a timestamp;
// a create served by the warm pool goes queued -> pool_claim -> ready (a claim whose container
// fails goes on cold: pool_claim -> image_pull -> …). A fork copies its source's workspace in
// between: image_pull -> workspace_copy -> container_create -> ….
import { z } from 'zod';
import type { StoreCollection } from '../store/store.ts';

export const PROVISION_PHASES = [
  'queued',
  'pool_claim',
  'image_pull',
  /** A fork's workspace is copied from its source (create from_sandbox / from_snapshot). */
  'workspace_copy',
  'container_create',
  'container_start',
  'health_check',
  'ready',
  'failed',
] as const;
export const ProvisionPhaseSchema = z.enum(PROVISION_PHASES);
export type ProvisionPhase = z.infer<typeof ProvisionPhaseSchema>;

export const ProvisionProgressSchema = z.object({
  callId: z.string(),
  sandboxId: z.string(),
  serviceId: z.string(),
  /** The create's caller (the sandbox's owner): who may read the detail on the API. */
  owner: z.string().optional(),
  phase: ProvisionPhaseSchema,
  /** Every phase entered, in order, with the time it was entered (ms since epoch). */
  phases: z.array(z.object({ phase: ProvisionPhaseSchema, at: z.number().int() })),
  /** Phase that was running when it failed. */
  failedPhase: ProvisionPhaseSchema.nullable(),
  error: z.string().nullable(),
  /**
   * During (and after) image_pull of a registry image: what is being pulled and how far it is
   * (layers announced / complete, compressed bytes downloaded / announced). Absent: no pull.
   */
  pull: z
    .object({
      image: z.string(),
      layers: z.number().int(),
      layersDone: z.number().int(),
      bytesDone: z.number(),
      bytesTotal: z.number(),
      done: z.boolean(),
    })
    .optional(),
  startedAt: z.number().int(),
  updatedAt: z.number().int(),
});
export type ProvisionProgress = z.infer<typeof ProvisionProgressSchema>;

/** Call ids count per service on Tangle, so a provision is keyed by both. */
export function provisionKey(serviceId: string, callId: string): string {
  return `${serviceId}:${callId}`;
}

export function newProgress(p: {
  callId: string;
  sandboxId: string;
  serviceId: string;
  owner?: string;
  now: number;
}): ProvisionProgress {
  return {
    callId: p.callId,
    sandboxId: p.sandboxId,
    serviceId: p.serviceId,
    ...(p.owner ? { owner: p.owner.toLowerCase() } : {}),
    phase: 'queued',
    phases: [{ phase: 'queued', at: p.now }],
    failedPhase: null,
    error: null,
    startedAt: p.now,
    updatedAt: p.now,
  };
}

/** Records phase moves for one provision; also reports each finished phase's duration. */
export class ProvisionTracker {
  #progress: ProvisionProgress;
  readonly #coll: StoreCollection<ProvisionProgress>;
  readonly #now: () => number;
  readonly #onPhaseDone: (phase: ProvisionPhase, seconds: number) => void;

  constructor(
    progress: ProvisionProgress,
    coll: StoreCollection<ProvisionProgress>,
    now: () => number,
    onPhaseDone: (phase: ProvisionPhase, seconds: number) => void,
  ) {
    this.#progress = progress;
    this.#coll = coll;
    this.#now = now;
    this.#onPhaseDone = onPhaseDone;
  }

  get current(): ProvisionProgress {
    return this.#progress;
  }

  /** Records how far the image pull is (the phase stays image_pull). */
  async pullProgress(pull: NonNullable<ProvisionProgress['pull']>): Promise<void> {
    this.#progress = { ...this.#progress, pull, updatedAt: this.#now() };
    await this.#coll.put(provisionKey(this.#progress.serviceId, this.#progress.callId), this.#progress);
  }

  async enter(phase: ProvisionPhase, error?: string): Promise<void> {
    const at = this.#now();
    const prev = this.#progress.phases.at(-1);
    if (prev) this.#onPhaseDone(prev.phase, Math.max(0, at - prev.at) / 1000);
    const next: ProvisionProgress = {
      ...this.#progress,
      phase,
      phases: [...this.#progress.phases, { phase, at }],
      failedPhase: phase === 'failed' ? (prev?.phase ?? null) : this.#progress.failedPhase,
      error: error ?? this.#progress.error,
      updatedAt: at,
    };
    // Held here once written (a refused write, a full disk, leaves the last phase that was).
    await this.#coll.put(provisionKey(next.serviceId, next.callId), next);
    this.#progress = next;
  }
}
