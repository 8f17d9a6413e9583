// Request body size limits (1 MiB, secrets and file uploads larger) and the whole-request timeout (streams excepted).
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';

const SECRETS_PATH = /^\/api\/(sandboxes\/[^/]+|sandbox)\/secrets$/;
const FILES_PATH = /^\/api\/(sandboxes\/[^/]+|sandbox)\/files\/content$/;
// SSE streams and the port proxy (which may carry streams of its own) run as long as they need.
const STREAM_PATH =
  /^\/api\/(sandboxes\/[^/]+|sandbox)\/(runs\/[^/]+\/events|terminals\/[^/]+\/stream|port\/.*)$/;

export function bodyLimits(opts: {
  bodyLimit: number;
  secretsBodyLimit: number;
  filesBodyLimit: number;
}): MiddlewareHandler<ApiEnv> {
  const tooLarge = (max: number) => () => {
    throw new RuntimeError('PAYLOAD_TOO_LARGE', `request body exceeds ${max} bytes`, {
      details: { max_bytes: max },
    });
  };
  const normal = bodyLimit({ maxSize: opts.bodyLimit, onError: tooLarge(opts.bodyLimit) });
  const secrets = bodyLimit({ maxSize: opts.secretsBodyLimit, onError: tooLarge(opts.secretsBodyLimit) });
  const files = bodyLimit({ maxSize: opts.filesBodyLimit, onError: tooLarge(opts.filesBodyLimit) });
  return (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    if (FILES_PATH.test(c.req.path)) return files(c, next);
    return (SECRETS_PATH.test(c.req.path) ? secrets : normal)(c, next);
  };
}

export function isStreamPath(path: string): boolean {
  return STREAM_PATH.test(path);
}

export function requestTimeout(ms: number): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (isStreamPath(c.req.path)) return next();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RuntimeError('REQUEST_TIMEOUT', `request took longer than ${ms} ms; retry later`)),
        ms,
      );
    });
    try {
      await Promise.race([next(), expired]);
    } finally {
      clearTimeout(timer);
    }
  };
}
