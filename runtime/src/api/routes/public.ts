// Public routes: health, readiness, metrics, capabilities and provision progress.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Registry } from 'prom-client';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes, HealthCheck, InstanceHealth, OperatorMode } from '../deps.ts';
import { errors, json } from '../schemas.ts';

type CheckResult = 'ok' | 'error' | 'not_configured';

const InstanceHealthSchema = z
  .object({
    state: z.string().openapi({ description: 'provisioning, ready, failed (retrying), waiting or ended' }),
    sandboxId: z.string().nullable(),
    failures: z.number().int().openapi({ description: 'failed provision attempts in a row' }),
    lastError: z.string().nullable(),
    nextAttemptAt: z.number().int().nullable().openapi({ description: 'epoch ms of the next retry' }),
    reportedOnChain: z.boolean(),
  })
  .openapi('InstanceHealth');

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
  })
  .openapi('Health');

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  tags: ['public'],
  summary: 'Operator health: runtime (engine), store and chain checks',
  responses: { 200: json(HealthSchema, 'Healthy'), 503: json(HealthSchema, 'Degraded') },
});

const readyRoute = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['public'],
  summary: 'Readiness: reconciled and taking work',
  responses: {
    200: json(z.object({ status: z.literal('ready') }), 'Ready'),
    503: json(z.object({ status: z.literal('not_ready') }), 'Not ready'),
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['public'],
  summary: 'Prometheus metrics',
  responses: {
    200: { content: { 'text/plain': { schema: z.string() } }, description: 'Prometheus text format' },
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
  summary: 'Provision progress of a create job',
  request: {
    params: z.object({ callId: z.string().regex(/^[0-9]{1,78}$/, 'callId is a decimal job call id') }),
  },
  responses: {
    200: json(z.record(z.string(), z.unknown()).openapi('Provision'), 'Progress'),
    ...errors(400, 404),
  },
});

const CHECK_TIMEOUT_MS = 2_000;
const PROVISION_FIELDS = [
  'callId',
  'sandboxId',
  'serviceId',
  'phase',
  'phases',
  'failedPhase',
  'error',
  'startedAt',
  'updatedAt',
] as const;

async function runCheck(check: HealthCheck | undefined): Promise<CheckResult> {
  if (!check) return 'not_configured';
  let timer: NodeJS.Timeout | undefined;
  try {
    const r = await Promise.race([
      Promise.resolve().then(check),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return r === false ? 'error' : 'ok';
  } catch {
    return 'error';
  } finally {
    clearTimeout(timer);
  }
}

export interface PublicRouteDeps {
  mode: OperatorMode;
  capabilities: Record<string, unknown>;
  health: { runtime?: HealthCheck; store?: HealthCheck; chain?: HealthCheck } | undefined;
  ready: (() => boolean) | undefined;
  instance?: (() => InstanceHealth | undefined) | undefined;
  metrics: Registry;
  sandboxes: ApiSandboxes;
}

export function publicRoutes(d: PublicRouteDeps): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>();

  app.openapi(healthRoute, async (c) => {
    const [runtime, store, chain] = await Promise.all([
      runCheck(d.health?.runtime),
      runCheck(d.health?.store),
      runCheck(d.health?.chain),
    ]);
    const instance = d.instance?.();
    const checks = {
      runtime,
      store,
      chain,
      ...(instance ? { instance: instance.state === 'failed' ? 'error' : 'ok' } : {}),
    };
    const body = { checks, ...(instance ? { instance } : {}) };
    const degraded = Object.values(checks).includes('error');
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
    const text = await d.metrics.metrics();
    return c.text(text, 200, { 'content-type': d.metrics.contentType });
  });

  app.openapi(capabilitiesRoute, (c) => c.json({ ...d.capabilities, mode: d.mode }, 200));

  app.openapi(provisionRoute, async (c) => {
    const { callId } = c.req.valid('param');
    const p = await d.sandboxes.getProvision(callId);
    if (!p) throw new RuntimeError('NOT_FOUND', `no provision recorded for call ${callId}`);
    // Public route: only the progress facts, whatever else a record may grow to hold.
    const out: Record<string, unknown> = {};
    for (const k of PROVISION_FIELDS) if (p[k] !== undefined) out[k] = p[k];
    return c.json(out, 200);
  });

  return app;
}
