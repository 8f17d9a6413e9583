// The Hono environment shared by the API's middleware and routes: per-request variables.
import type { Logger } from 'pino';
import type { SandboxRecord } from '../sandbox/record.ts';
import type { SessionClaims } from './deps.ts';

export interface ApiVariables {
  requestId: string;
  clientIp: string;
  log: Logger;
  /** Set by the session middleware: the caller, address lowercased. */
  session: SessionClaims & { address: string; token: string };
  /** Set by the resolver of the mount point (`/api/sandboxes/:id` or `/api/sandbox`). */
  sandboxId: string;
  /** Set by the access check: the sandbox the caller may use. */
  sandbox: SandboxRecord;
  /** Set by the access check: the caller owns the sandbox, or is one of its members. */
  role: 'owner' | 'member';
}

export interface ApiEnv {
  Variables: ApiVariables;
}
