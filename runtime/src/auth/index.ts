// Public surface of session auth: wallet sign-in, PASETO v4.local sessions, scope and owner checks.

export type { DecodedNonce, SiweBinding } from './challenge.ts';
export { legacyMessage, SIWE_STATEMENT, siweMessage, siweOrigin } from './challenge.ts';
export type { V4Local, V4LocalKey } from './paseto-v4-local.ts';
export { createV4Local, openV4Local, sealV4Local, v4LocalKey } from './paseto-v4-local.ts';
export type { ScopedClaims } from './scope.ts';
export { assertSandboxAccess, SCOPE_RE, sameAddress, scopeAllows } from './scope.ts';
export {
  challengeMessage,
  DEFAULT_SESSION_LIMITS,
  PASETO_KEY_INFO,
  PASETO_KEY_SALT,
  SessionAuth,
} from './session-auth.ts';
export type {
  Challenge,
  CollectResult,
  Session,
  SessionAuthLimits,
  SessionAuthOptions,
  SessionClaims,
} from './session-types.ts';
export { normalizeSignature, recoverSigner } from './signature.ts';
