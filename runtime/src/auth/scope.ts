// Session scopes and owner checks: who may touch which sandbox.
import { RuntimeError } from '../errors.ts';

/** `sandbox:{id}` (cloud mode) or `instance:{id}` (instance mode) narrows a session to one sandbox. */
export const SCOPE_RE = /^(sandbox|instance):[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export interface ScopedClaims {
  address: string;
  scope?: string | undefined;
}

/** True when a session's scope admits `sandboxId` (an unscoped session admits any). */
export function scopeAllows(claims: ScopedClaims, sandboxId: string): boolean {
  if (claims.scope === undefined) return true;
  return claims.scope === `sandbox:${sandboxId}` || claims.scope === `instance:${sandboxId}`;
}

/** Case-insensitive address equality (checksummed vs lowercase hex). */
export function sameAddress(a: string | undefined | null, b: string | undefined | null): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a === '' || b === '') return false;
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * Throws FORBIDDEN unless the session's address owns the sandbox and its scope admits it. Both
 * failures say the same thing, so a caller cannot probe which sandboxes exist for others.
 */
export function assertSandboxAccess(claims: ScopedClaims, sandbox: { id: string; owner: string }): void {
  if (!sameAddress(claims.address, sandbox.owner) || !scopeAllows(claims, sandbox.id)) {
    throw new RuntimeError(
      'FORBIDDEN',
      'this session may not access that sandbox; sign in with the wallet that owns it (and a matching scope)',
    );
  }
}
