// x-request-id: accept a well-formed one from the caller, else generate; echo it and bind a logger.
import { randomBytes } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { ApiEnv } from '../context.ts';

// Printable, header- and log-safe, bounded: anything else is replaced rather than trusted.
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{8,128}$/;

export function newRequestId(): string {
  return `req-${randomBytes(12).toString('hex')}`;
}

export function acceptRequestId(value: string | undefined): string {
  return value !== undefined && REQUEST_ID_RE.test(value) ? value : newRequestId();
}

export function requestId(logger: Logger): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const id = acceptRequestId(c.req.header('x-request-id'));
    c.set('requestId', id);
    c.set('log', logger.child({ request_id: id }));
    c.header('x-request-id', id);
    await next();
    // Error handlers build fresh responses; make sure the id is on whatever leaves.
    c.res.headers.set('x-request-id', id);
  };
}
