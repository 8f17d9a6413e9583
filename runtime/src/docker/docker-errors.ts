// How a dockerode error is read (status, message) and wrapped as the runtime's DOCKER_ERROR.
import { RuntimeError } from '../errors.ts';

interface DockerErrorLike {
  statusCode?: number;
  json?: { message?: string } | null;
  message?: string;
}

export function dockerStatus(e: unknown): number | undefined {
  return (e as DockerErrorLike | null)?.statusCode;
}

export function dockerMessage(e: unknown): string {
  const d = e as DockerErrorLike | null;
  return (d?.json?.message ?? d?.message ?? String(e)).trim();
}

/** Socket errors that mean no engine answers at the configured socket (gone, stopped, refused). */
const GONE = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTSOCK']);

type SocketError = { code?: unknown; syscall?: unknown; message?: unknown; cause?: unknown };

/** The socket error (or call timeout) on `e` or its causes that says no engine answers. */
function goneCause(e: unknown): SocketError | undefined {
  for (let x = e as SocketError | undefined, i = 0; x && i < 8; i++, x = x.cause as SocketError) {
    // A short call that got no answer in time (bounded-calls.ts): accepted, then silence.
    if (x.code === 'ENGINE_TIMEOUT') return x;
    if (typeof x.code !== 'string' || !GONE.has(x.code)) continue;
    // Connecting failed, or the engine dropped the connection under a request.
    if (x.syscall === 'connect' || x.code === 'ECONNRESET' || x.code === 'EPIPE') return x;
  }
  return undefined;
}

/** The engine itself is not there (not: the engine refused a request), found on `e` or its causes. */
export function engineGone(e: unknown): boolean {
  return goneCause(e) !== undefined;
}

/** ENGINE_UNAVAILABLE for `e`, naming what was seen (the socket error, or the call left unanswered). */
export function engineUnavailable(e: unknown, waited?: string): RuntimeError {
  const x = goneCause(e) ?? (e as SocketError | undefined);
  const code = x?.code === 'ENGINE_TIMEOUT' ? String(x.message) : String(x?.code ?? 'no answer');
  return new RuntimeError(
    'ENGINE_UNAVAILABLE',
    `the Docker engine does not answer (${code})${waited ? `, ${waited}` : ''}; nothing was created. Start it (or fix DOCKER_HOST / the socket path) — running sandboxes are adopted again when it is back`,
    { cause: e },
  );
}

export function wrap(what: string, e: unknown): RuntimeError {
  if (engineGone(e)) return engineUnavailable(e);
  if (e instanceof RuntimeError) return e;
  return new RuntimeError('DOCKER_ERROR', `docker ${what} failed: ${dockerMessage(e)}`, { cause: e });
}
