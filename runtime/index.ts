// @agent-sandbox/runtime: public door of the package.

export type {
  Challenge,
  CollectResult,
  ScopedClaims,
  Session,
  SessionAuthLimits,
  SessionAuthOptions,
  SessionClaims,
  V4Local,
  V4LocalKey,
} from './src/auth/index.ts';
export {
  assertSandboxAccess,
  challengeMessage,
  createV4Local,
  DEFAULT_SESSION_LIMITS,
  normalizeSignature,
  recoverSigner,
  SCOPE_RE,
  SessionAuth,
  sameAddress,
  scopeAllows,
  v4LocalKey,
} from './src/auth/index.ts';
export { deriveKey, parseAuthSecret } from './src/crypto.ts';
export type { RuntimeErrorCode } from './src/errors.ts';
export { isRuntimeError, RuntimeError, RuntimeErrorCodes } from './src/errors.ts';
export type { EncryptedStoreOptions, StoreCollection } from './src/store/index.ts';
export { EncryptedStore } from './src/store/index.ts';
