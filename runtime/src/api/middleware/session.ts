// Bearer PASETO session check and the owner/scope check that guards every sandbox route.
import type { MiddlewareHandler } from 'hono';
import { scopeAllows } from '../../auth/index.ts';
import { RuntimeError } from '../../errors.ts';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSandboxes, ApiSessions } from '../deps.ts';

const TOUCH_EVERY_MS = 1_000;
const BEARER_RE = /^Bearer ([A-Za-z0-9._~+/=-]{1,4096})$/;

export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER_RE.exec(header.trim())?.[1] : undefined;
}

export function requireSession(sessions: Pick<ApiSessions, 'verify'>): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const token = bearerToken(c.req.header('authorization'));
    if (!token)
      throw new RuntimeError('UNAUTHORIZED', 'sign in first: send Authorization: Bearer <session token>');
    let claims: Awaited<ReturnType<ApiSessions['verify']>>;
    try {
      claims = await sessions.verify(token);
    } catch (e) {
      // Why it failed (expired, revoked, forged) is logged, not told.
      c.get('log').info({ reason: e instanceof Error ? e.message : 'invalid' }, 'session refused');
      throw new RuntimeError('UNAUTHORIZED', 'session invalid or expired; sign in again');
    }
    if (!claims || typeof claims.address !== 'string') {
      throw new RuntimeError('UNAUTHORIZED', 'session invalid or expired; sign in again');
    }
    c.set('session', { ...claims, address: claims.address.toLowerCase(), token });
    await next();
  };
}

/** The sandbox a scope names (`sandbox:{id}` / `instance:{id}`), or undefined for an unscoped session. */
export function scopeSandboxId(scope: string | null | undefined): string | undefined {
  if (!scope) return undefined;
  const m = /^(sandbox|instance):(.+)$/.exec(scope);
  // An unparseable scope must not widen to "everything": it matches no sandbox.
  return m ? m[2] : '\u0000invalid-scope';
}

export function sameOwner(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The caller's role on a sandbox: its owner, a member (team access), or none. */
export function roleOn(record: SandboxRecord, address: string): 'owner' | 'member' | undefined {
  if (sameOwner(record.owner, address)) return 'owner';
  return (record.members ?? []).includes(address.toLowerCase()) ? 'member' : undefined;
}

/** Owner-only actions (members, secrets, preview links, snapshots): FORBIDDEN for a member. */
export function assertOwner(c: { get(k: 'role'): 'owner' | 'member' }, what: string): void {
  if (c.get('role') !== 'owner') {
    throw new RuntimeError('FORBIDDEN', `only the sandbox's owner may ${what}; members may not`);
  }
}

/**
 * Loads the addressed sandbox and checks that the caller may use it: a scoped token only on its
 * sandbox (403), an unknown or deleted sandbox 404, a wallet that neither owns it nor is a member
 * 403. The record is read afresh on every request, so a member removed a moment ago is refused.
 * Then counts activity.
 */
export function requireSandboxAccess(sandboxes: ApiSandboxes): MiddlewareHandler<ApiEnv> {
  const lastTouch = new Map<string, number>();
  return async (c, next) => {
    const id = c.get('sandboxId');
    const session = c.get('session');
    if (!id) throw new RuntimeError('SANDBOX_NOT_FOUND', 'this operator has no instance sandbox yet');
    if (!scopeAllows({ address: session.address, scope: session.scope ?? undefined }, id)) {
      throw new RuntimeError('FORBIDDEN', 'this session is scoped to another sandbox; sign in for this one');
    }
    const record: SandboxRecord | null | undefined = await sandboxes.get(id);
    if (!record || record.state === 'deleted') {
      throw new RuntimeError('SANDBOX_NOT_FOUND', `no sandbox ${id}; list yours with GET /api/sandboxes`);
    }
    // Spec: another owner's sandbox answers 403 (not 404), on every route.
    const role = roleOn(record, session.address);
    if (!role) throw new RuntimeError('FORBIDDEN', 'this sandbox belongs to another wallet');
    c.set('sandbox', record);
    c.set('role', role);
    // Not awaited, and at most once a second per sandbox: activity bookkeeping (a store write)
    // must not add latency or load to every request; idle timers count in minutes.
    const log = c.get('log');
    const now = Date.now();
    if (now - (lastTouch.get(id) ?? 0) < TOUCH_EVERY_MS) return next();
    lastTouch.set(id, now);
    if (lastTouch.size > 100_000) lastTouch.clear();
    Promise.resolve()
      .then(() => sandboxes.touch(id))
      .catch((e: unknown) => {
        log.warn(
          { err: e instanceof Error ? e.message : String(e), sandbox_id: id },
          'activity not recorded',
        );
      });
    await next();
  };
}

/** exec, prompt, task and terminals need a running sandbox. */
export function assertRunning(record: SandboxRecord): void {
  if (record.state === 'running') return;
  if (record.state === 'stopped') {
    throw new RuntimeError('SANDBOX_STOPPED', `sandbox ${record.id} is stopped; POST …/resume first`, {
      details: { state: record.state },
    });
  }
  throw new RuntimeError('SANDBOX_NOT_RUNNING', `sandbox ${record.id} is ${record.state}, not running`, {
    details: { state: record.state },
  });
}
