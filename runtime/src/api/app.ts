// createOperatorApi: the operator's HTTP API (Hono), from its dependencies and configuration.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { WorkflowScheduler } from '../workflows/scheduler.ts';
import { WorkflowService } from '../workflows/workflow-service.ts';
import { type ApiConfig, type ApiConfigInput, parseApiConfig } from './config.ts';
import type { ApiEnv } from './context.ts';
import type { OperatorApiDeps } from './deps.ts';
import { asRuntimeError, errorResponse, notFoundResponse } from './error-handler.ts';
import { LiveAccess } from './live-access.ts';
import { accessLog } from './middleware/access-log.ts';
import { clientIp } from './middleware/client-ip.ts';
import { bodyLimits, requestTimeout } from './middleware/limits.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { requestId } from './middleware/request-id.ts';
import { securityHeaders } from './middleware/security-headers.ts';
import { requireSession } from './middleware/session.ts';
import { SessionCache } from './middleware/session-cache.ts';
import { serveOpenApiDocument } from './openapi.ts';
import { PreviewCredentials } from './previews/preview-credentials.ts';
import { previewHost } from './previews/preview-host.ts';
import { PreviewLinks } from './previews/preview-links.ts';
import { parsePreviewOrigin } from './previews/preview-origin.ts';
import { authRoutes } from './routes/auth.ts';
import { consoleRoutes } from './routes/console.ts';
import { publicRoutes } from './routes/public.ts';
import { registerList } from './routes/sandboxes.ts';
import { registerShapes } from './routes/shapes.ts';
import { validationHook } from './routes/validation.ts';
import { registerWorkflows } from './routes/workflows.ts';
import { RunLog } from './runs/run-log.ts';
import { RunMetrics } from './runs/run-metrics.ts';
import { RunService } from './runs/run-service.ts';
import { sandboxApi } from './sandbox-api.ts';
import { createApiSidecars } from './sidecars.ts';

export type OperatorApi = OpenAPIHono<ApiEnv> & {
  readonly config: ApiConfig;
  readonly runs: RunService;
  /** Stored workflows and their runs; job handlers create, trigger and cancel through it. */
  readonly workflows: WorkflowService;
  /** The cron loop; started by the operator once it takes work (stopped by dispose). */
  readonly scheduler: WorkflowScheduler;
  /** Resolves once runs interrupted by a previous process are recorded as failed. */
  readonly recovered: Promise<number>;
  /** Deletes old finished runs and runs of deleted sandboxes (also on a timer); returns how many. */
  sweepRuns(now?: number): Promise<number>;
  /** Stops background timers (rate-limit sweeper, run sweep, workflow scheduler). */
  dispose(): void;
};

export function createOperatorApi(deps: OperatorApiDeps, configInput?: ApiConfigInput): OperatorApi {
  const config = parseApiConfig({ ...deps.config, ...configInput });
  const logger = deps.logger;
  const runLog = new RunLog(deps.store, config.runs);
  const sidecars = deps.sidecars ?? createApiSidecars(deps.sandboxes, { timeouts: config.timeouts });
  const runs = new RunService(runLog, sidecars, logger, new RunMetrics(deps.metrics));
  const workflows = new WorkflowService({
    store: deps.store,
    sidecars,
    runs,
    runLog,
    logger,
    ...(deps.workflowSandbox ? { resolveSandbox: deps.workflowSandbox } : {}),
    touch: (id) => deps.sandboxes.touch(id),
    sandboxMetadata: async (id) => (await deps.sandboxes.get(id))?.metadata,
    defaultTimeoutMs: config.workflows.defaultTimeoutMs,
    maxTimeoutMs: config.workflows.maxTimeoutMs,
  });
  const scheduler = new WorkflowScheduler(workflows, logger);
  workflows.onChange(() => scheduler.poke());
  const limiter = rateLimit(config.rateLimits);
  const previews = {
    credentials: new PreviewCredentials(config.previewTtlMs),
    origin: config.previewOrigin ? parsePreviewOrigin(config.previewOrigin) : undefined,
    links: new PreviewLinks(deps.store),
  };
  const live = new LiveAccess();
  const routeDeps0 = { sandboxes: deps.sandboxes, config, live };
  const sessions = new SessionCache(deps.sessions);

  const app = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });
  app.onError((e, c) => errorResponse(c, e));
  app.notFound((c) => notFoundResponse(c));

  app.use('*', requestId(logger));
  app.use('*', securityHeaders({ tls: config.tls }));
  app.use('*', clientIp(config.trustedProxies));
  app.use('*', limiter.preflight);
  if (config.corsAllowedOrigins.length > 0) {
    const allowed = new Set(config.corsAllowedOrigins);
    app.use(
      '*',
      cors({
        origin: (origin) => (allowed.has(origin) ? origin : null),
        allowMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'],
        allowHeaders: ['authorization', 'content-type', 'x-request-id', 'last-event-id', 'idempotency-key'],
        exposeHeaders: ['x-request-id', 'retry-after'],
        maxAge: 600,
      }),
    );
  }
  app.use('*', accessLog(deps.metrics));
  app.use('*', limiter.middleware);
  // A preview host serves its sandbox port and nothing else (no API, no console).
  app.use('*', previewHost(routeDeps0, deps.sessions, previews.credentials, previews.origin, previews.links));
  app.use('*', bodyLimits(config));
  app.use('*', requestTimeout(config.requestTimeoutMs));

  app.route(
    '/',
    publicRoutes({
      mode: deps.mode,
      capabilities: deps.capabilities,
      health: deps.health,
      ready: deps.ready,
      instance: deps.instance,
      chainFeed: deps.chainFeed,
      engine: deps.engine,
      metrics: deps.metrics,
      sandboxes: deps.sandboxes,
      sessions,
      healthCacheMs: config.healthCacheMs,
      metricsToken: config.metricsToken,
    }),
  );
  registerShapes(app, deps.shapes);
  app.route('/', authRoutes(deps.sessions, sessions));
  app.route('/', consoleRoutes(deps.consoleDir));

  app.use('/api/sandboxes', requireSession(sessions));
  registerList(app, deps.sandboxes, config.ssh && !deps.tee);
  app.use('/api/workflows', requireSession(sessions));
  app.use('/api/workflows/*', requireSession(sessions));
  registerWorkflows(app, workflows);

  const routeDeps = { sandboxes: deps.sandboxes, sidecars, runs, runLog, config, tee: deps.tee, live };
  const sandboxRoutes = sandboxApi(routeDeps, sessions, previews);
  const setSandboxId =
    (
      resolve: (c: Parameters<MiddlewareHandler<ApiEnv>>[0]) => string | undefined,
    ): MiddlewareHandler<ApiEnv> =>
    async (c, next) => {
      c.set('sandboxId', resolve(c) ?? '');
      await next();
    };
  app.use(
    '/api/sandboxes/:id/*',
    setSandboxId((c) => c.req.param('id')),
  );
  app.route('/api/sandboxes/:id', sandboxRoutes);
  if (deps.mode !== 'cloud') {
    const instanceId = () =>
      typeof deps.instanceSandboxId === 'function' ? deps.instanceSandboxId() : deps.instanceSandboxId;
    app.use('/api/sandbox/*', setSandboxId(instanceId));
    app.route('/api/sandbox', sandboxRoutes);
  }

  serveOpenApiDocument(app);

  const recovered = runLog
    .recover('the operator restarted while this run was going on')
    .catch((e: unknown) => {
      logger.error({ err: e instanceof Error ? e.message : String(e) }, 'could not recover interrupted runs');
      return 0;
    });
  const gone = async (id: string) => {
    try {
      const r = await deps.sandboxes.get(id);
      return !r || r.state === 'deleted';
    } catch (e) {
      return asRuntimeError(e).code === 'NOT_FOUND';
    }
  };
  const sweepRuns = async (now = Date.now()) => {
    const n = await runLog.sweep(now, gone);
    await runs.forgetGoneMetrics(gone);
    return n;
  };
  const sweeper = setInterval(() => {
    sweepRuns().catch((e: unknown) =>
      logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'run sweep failed'),
    );
  }, config.runs.sweepIntervalMs);
  sweeper.unref();
  const dispose = () => {
    clearInterval(sweeper);
    limiter.stop();
    void scheduler.stop();
  };
  return Object.assign(app, { config, runs, workflows, scheduler, recovered, sweepRuns, dispose });
}
