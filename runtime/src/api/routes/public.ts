// Public routes: health, readiness, metrics, capabilities and provision progress. Anyone may call
// them; what they show of a tenant depends on who asks (public-access.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Registry } from 'prom-client';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type {
  ApiSandboxes,
  ApiSessions,
  ChainFeedHealth,
  EngineHealth,
  HealthCheck,
  InstanceHealth,
  OperatorMode,
} from '../deps.ts';
import { bearerToken } from '../middleware/session.ts';
import { errors, json } from '../schemas.ts';
import { cachedCheck, isMetricsToken, mayInspect, publicCaller } from './public-access.ts';

const InstanceHealthSchema = z
  .object({
    state: z.string().openapi({ description: 'provisioning, ready, failed (retrying), waiting or ended' }),
    sandboxId: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "only for the instance's owner (session) or the operator's METRICS_TOKEN" }),
    failures: z.number().int().openapi({ description: 'failed provision attempts in a row' }),
    lastError: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "only for the instance's owner (session) or the operator's METRICS_TOKEN" }),
    nextAttemptAt: z.number().int().nullable().openapi({ description: 'epoch ms of the next retry' }),
    reportedOnChain: z.boolean(),
  })
  .openapi('InstanceHealth');

const ChainFeedSchema = z
  .object({
    state: z.enum(['ok', 'unreachable', 'recovering']),
    message: z.string().openapi({ example: 'chain unreachable since 2026-12-01T23:50:00.000Z' }),
    unreachableSince: z.number().int().optional().openapi({ description: 'epoch ms, while the RPC fails' }),
    lastReorg: z
      .object({
        at: z.number().int(),
        fork: z.string().openapi({ description: 'the newest block both chains share' }),
        oldHead: z.string().openapi({ description: 'the newest block scanned before the reorg' }),
        scannedTo: z.string().openapi({ description: 'rescan progress: recovered once past oldHead' }),
        vanished: z.number().int().openapi({ description: 'calls the reorg removed (their work undone)' }),
        resent: z.number().int().openapi({ description: 'answered calls whose results were sent again' }),
        recovering: z.boolean(),
      })
      .optional(),
  })
  .openapi('ChainFeed');

const EngineSchema = z
  .object({
    state: z.enum(['up', 'down', 'adopting']),
    message: z
      .string()
      .optional()
      .openapi({ example: 'Docker engine unreachable since 2026-12-02T05:50:00.000Z; …' }),
    downSince: z.number().int().optional().openapi({ description: 'epoch ms, while down or adopting' }),
    losses: z.number().int().openapi({ description: 'engine losses since the operator started' }),
    adoption: z
      .object({ total: z.number().int(), adopted: z.number().int(), failed: z.number().int() })
      .optional()
      .openapi({
        description: "the last outage's adoption: running sandboxes to bring back, brought back, failed",
      }),
    lastOutage: z
      .object({ downSince: z.number().int(), backAt: z.number().int(), adoptedAt: z.number().int() })
      .optional()
      .openapi({ description: 'the last outage once over (epoch ms)' }),
  })
  .openapi('Engine');

const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']),
    checks: z.object({
      runtime: z.string(),
      store: z.string(),
      chain: z.string(),
      instance: z
        .string()
        .optional()
        .openapi({ description: 'instance modes: error while its provision fails' }),
    }),
    instance: InstanceHealthSchema.optional(),
    chainFeed: ChainFeedSchema.optional().openapi({
      description: 'the job feed: degraded while the chain RPC is unreachable or a reorg is recovered from',
    }),
    engine: EngineSchema.optional().openapi({
      description: 'the Docker engine: degraded while it is gone and while its sandboxes are adopted back',
    }),
  })
  .openapi('Health');

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  tags: ['public'],
  summary:
    'Operator health: runtime (engine), store and chain checks, each run at most once per healthCacheMs (5 s); rate limited',
  responses: {
    200: json(HealthSchema, 'Healthy'),
    503: json(HealthSchema, 'Degraded'),
    ...errors(401, 429),
  },
});

const readyRoute = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['public'],
  summary: 'Readiness: reconciled and taking work; rate limited',
  responses: {
    200: json(z.object({ status: z.literal('ready') }), 'Ready'),
    503: json(z.object({ status: z.literal('not_ready') }), 'Not ready'),
    ...errors(429),
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['public'],
  summary:
    'Prometheus metrics. With METRICS_TOKEN set: Bearer <token> required, every series; unset: public, without per-sandbox series',
  responses: {
    200: { content: { 'text/plain': { schema: z.string() } }, description: 'Prometheus text format' },
    ...errors(401, 429),
  },
});

const capabilitiesRoute = createRoute({
  method: 'get',
  path: '/api/capabilities',
  tags: ['public'],
  summary: 'What this operator offers: mode, runtime backends, harnesses, TEE',
  responses: { 200: json(z.record(z.string(), z.unknown()).openapi('Capabilities'), 'Capabilities') },
});

const provisionRoute = createRoute({
  method: 'get',
  path: '/api/provisions/{callId}',
  tags: ['public'],
  summary:
    "Provision progress of a create job: phases (and `pull`, a registry image's pull: image, layers, layersDone, bytesDone, bytesTotal, done) for anyone; sandbox id, service and error for the call's owner (session)",
  request: {
    params: z.object({ callId: z.string().regex(/^[0-9]{1,78}$/, 'callId is a decimal job call id') }),
  },
  responses: {
    200: json(z.record(z.string(), z.unknown()).openapi('Provision'), 'Progress'),
    ...errors(400, 401, 404),
  },
});

// Everyone: where a create is (the phases a client shows while it waits, before it signs in).
// `pull` (a registry image's pull progress) names only the image, which the create job made public.
const PROGRESS_FIELDS = ['callId', 'phase', 'phases', 'failedPhase', 'pull', 'updatedAt'] as const;
// The call's owner (or the operator): also which sandbox, which service, and why it failed.
const OWNER_FIELDS = [...PROGRESS_FIELDS, 'sandboxId', 'serviceId', 'error', 'startedAt'] as const;

/** A Prometheus text exposition without the samples labelled with a sandbox (per-tenant series). */
function withoutSandboxSeries(text: string): string {
  return text
    .split('\n')
    .filter((l) => l.startsWith('#') || !/[{,]sandbox_id="/.test(l))
    .join('\n');
}

/** Only the public fields (a status object may carry more, e.g. the socket error). */
function publicEngine(e: EngineHealth | undefined): EngineHealth | undefined {
  if (!e) return undefined;
  return {
    state: e.state,
    losses: e.losses,
    ...(e.message ? { message: e.message } : {}),
    ...(e.downSince !== undefined ? { downSince: e.downSince } : {}),
    ...(e.adoption
      ? { adoption: { total: e.adoption.total, adopted: e.adoption.adopted, failed: e.adoption.failed } }
      : {}),
    ...(e.lastOutage
      ? {
          lastOutage: {
            downSince: e.lastOutage.downSince,
            backAt: e.lastOutage.backAt,
            adoptedAt: e.lastOutage.adoptedAt,
          },
        }
      : {}),
  };
}

export interface PublicRouteDeps {
  mode: OperatorMode;
  capabilities: Record<string, unknown>;
  health: { runtime?: HealthCheck; store?: HealthCheck; chain?: HealthCheck } | undefined;
  ready: (() => boolean) | undefined;
  instance?: (() => InstanceHealth | undefined) | undefined;
  chainFeed?: (() => ChainFeedHealth | undefined) | undefined;
  engine?: (() => EngineHealth | undefined) | undefined;
  metrics: Registry;
  sandboxes: ApiSandboxes;
  sessions: Pick<ApiSessions, 'verify'>;
  /** How long a health check's result is reused (ms). */
  healthCacheMs: number;
  metricsToken: string | undefined;
}

export function publicRoutes(d: PublicRouteDeps): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>();

  const checks = {
    runtime: cachedCheck(d.health?.runtime, d.healthCacheMs),
    store: cachedCheck(d.health?.store, d.healthCacheMs),
    chain: cachedCheck(d.health?.chain, d.healthCacheMs),
  };
  const ownerOf = async (sandboxId: unknown): Promise<string | undefined> => {
    if (typeof sandboxId !== 'string' || !sandboxId) return undefined;
    return (await d.sandboxes.get(sandboxId))?.owner;
  };

  app.openapi(healthRoute, async (c) => {
    const caller = await publicCaller(c, d.sessions, d.metricsToken);
    const [runtime, store, chain] = await Promise.all([checks.runtime(), checks.store(), checks.chain()]);
    const full = d.instance?.();
    let instance: (Omit<InstanceHealth, 'sandboxId' | 'lastError'> & Partial<InstanceHealth>) | undefined =
      full;
    if (full) {
      const owner = await ownerOf(full.sandboxId);
      if (!mayInspect(caller, { id: full.sandboxId ?? '', owner })) {
        const { sandboxId: _id, lastError: _err, ...rest } = full;
        instance = rest;
      }
    }
    const chainFeed = d.chainFeed?.();
    const result = {
      runtime,
      store,
      // The job feed knows at once when the RPC fails; the cached check may not yet.
      chain: chainFeed?.state === 'unreachable' ? ('error' as const) : chain,
      ...(full ? { instance: full.state === 'failed' ? 'error' : 'ok' } : {}),
    };
    const engine = publicEngine(d.engine?.());
    const body = {
      checks: result,
      ...(instance ? { instance } : {}),
      ...(chainFeed ? { chainFeed } : {}),
      ...(engine ? { engine } : {}),
    };
    const degraded =
      Object.values(result).includes('error') ||
      (chainFeed && chainFeed.state !== 'ok') ||
      (engine && engine.state !== 'up');
    return degraded
      ? c.json({ status: 'degraded' as const, ...body }, 503)
      : c.json({ status: 'ok' as const, ...body }, 200);
  });

  app.openapi(readyRoute, (c) =>
    (d.ready?.() ?? true)
      ? c.json({ status: 'ready' as const }, 200)
      : c.json({ status: 'not_ready' as const }, 503),
  );

  app.openapi(metricsRoute, async (c) => {
    const operator = isMetricsToken(bearerToken(c.req.header('authorization')), d.metricsToken);
    if (d.metricsToken && !operator) {
      throw new RuntimeError('UNAUTHORIZED', 'metrics need Authorization: Bearer <METRICS_TOKEN>');
    }
    const text = await d.metrics.metrics();
    return c.text(operator ? text : withoutSandboxSeries(text), 200, {
      'content-type': d.metrics.contentType,
    });
  });

  app.openapi(capabilitiesRoute, (c) => c.json({ ...d.capabilities, mode: d.mode }, 200));

  app.openapi(provisionRoute, async (c) => {
    const { callId } = c.req.valid('param');
    const caller = await publicCaller(c, d.sessions, d.metricsToken);
    const p = await d.sandboxes.getProvision(callId);
    if (!p) throw new RuntimeError('NOT_FOUND', `no provision recorded for call ${callId}`);
    const sandboxId = typeof p['sandboxId'] === 'string' ? p['sandboxId'] : '';
    const owner = typeof p['owner'] === 'string' ? p['owner'] : await ownerOf(sandboxId);
    // Only the listed facts, whatever else a record may grow to hold.
    const fields = mayInspect(caller, { id: sandboxId, owner }) ? OWNER_FIELDS : PROGRESS_FIELDS;
    const out: Record<string, unknown> = {};
    for (const k of fields) if (p[k] !== undefined) out[k] = p[k];
    return c.json(out, 200);
  });

  return app;
}
