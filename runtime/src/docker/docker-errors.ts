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

export function wrap(what: string, e: unknown): RuntimeError {
  if (e instanceof RuntimeError) return e;
  return new RuntimeError('DOCKER_ERROR', `docker ${what} failed: ${dockerMessage(e)}`, { cause: e });
}
