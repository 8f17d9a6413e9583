// x-request-id: accept a well-formed one from the caller, else generate; echo it and bind a logger.
import { randomBytes } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { ApiEnv } from '../context.ts';

// Defence in depth: no API log line is meant to carry these, and if one ever does they are masked.
const REDACT = {
  paths: [
    'authorization',
    'headers.authorization',
    'req.headers.authorization',
    'token',
    '*.token',
    'env',
    '*.env',
    'body',
    '*.body',
    'secret',
    '*.secret',
  ],
  censor: '[redacted]',
};

// Printable, header- and log-safe, bounded: anything else is replaced rather than trusted.
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{8,128}$/;

// A random per-process prefix and a counter: unique across restarts and operators, and cheaper
// than fresh randomness on every request (ids need to be unique, not secret).
const PREFIX = randomBytes(6).toString('hex');
let counter = 0;

export function newRequestId(): string {
  counter = (counter + 1) % 0x1000000000000;
  return `req-${PREFIX}${counter.toString(16).padStart(12, '0')}`;
}

export function acceptRequestId(value: string | undefined): string {
  return value !== undefined && REQUEST_ID_RE.test(value) ? value : newRequestId();
}

export function requestId(logger: Logger): MiddlewareHandler<ApiEnv> {
  // Redaction is compiled once here; per-request children inherit it.
  const apiLogger = logger.child({ component: 'operator-api' }, { redact: REDACT });
  return async (c, next) => {
    const id = acceptRequestId(c.req.header('x-request-id'));
    c.set('requestId', id);
    c.set('log', apiLogger.child({ request_id: id }));
    c.header('x-request-id', id);
    await next();
    // Error handlers build fresh responses; make sure the id is on whatever leaves.
    c.res.headers.set('x-request-id', id);
  };
}
