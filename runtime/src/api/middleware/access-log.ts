// One structured log line and metrics per request: method, route path (no query: SSE `?token=`),
// status, duration, client IP; never headers or bodies.
import type { MiddlewareHandler } from 'hono';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ApiEnv } from '../context.ts';
import type { RouteClass } from './rate-limit.ts';
import { classify } from './rate-limit.ts';

function metric<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function accessLog(registry: Registry): MiddlewareHandler<ApiEnv> {
  const requests = metric(
    registry,
    'operator_api_requests_total',
    () =>
      new Counter({
        name: 'operator_api_requests_total',
        help: 'Operator API requests by route class, method and status',
        labelNames: ['class', 'method', 'status'],
        registers: [registry],
      }),
  );
  const duration = metric(
    registry,
    'operator_api_request_duration_seconds',
    () =>
      new Histogram({
        name: 'operator_api_request_duration_seconds',
        help: 'Operator API time to response headers',
        labelNames: ['class'],
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
        registers: [registry],
      }),
  );
  return async (c, next) => {
    const start = performance.now();
    await next();
    const ms = performance.now() - start;
    const cls: RouteClass = classify(c.req.method, c.req.path);
    requests.inc({ class: cls, method: c.req.method, status: String(c.res.status) });
    duration.observe({ class: cls }, ms / 1000);
    c.get('log').info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(ms * 10) / 10,
        ip: c.get('clientIp'),
      },
      'request',
    );
  };
}
