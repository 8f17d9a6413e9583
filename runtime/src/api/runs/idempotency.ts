// The identity of an agent turn for idempotent admission: a sha256 digest over the turn's effective
// request in canonical JSON. Only what changes the work is in it: the kind, message, session,
// backend, task metadata and time budget. Bearer material is never part of it: the caller's
// Authorization (a session token, which a retry after a fresh sign-in changes) and any secret stay
// outside the request, so a retry with new credentials is the same turn, not a conflict.
import { createHash } from 'node:crypto';
import type { RunKind } from './run-log.ts';

/** JSON with object keys sorted at every depth and undefined members left out. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export interface TurnIdentity {
  kind: RunKind;
  message: string;
  sessionId?: string | undefined;
  backend?: { type?: string | undefined; model?: string | undefined } | undefined;
  metadata?: Record<string, unknown> | undefined;
  timeoutMs: number;
}

/** `sha256:<64 hex>` of the turn's canonical identity. */
export function requestDigest(turn: TurnIdentity): string {
  const body = canonicalJson({
    v: 1,
    kind: turn.kind,
    message: turn.message,
    session_id: turn.sessionId,
    backend: turn.backend,
    metadata: turn.metadata,
    timeout_ms: turn.timeoutMs,
  });
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}
