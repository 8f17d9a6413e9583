// @agent-sandbox/runtime: public door of the package.
export {};
export { deriveKey, parseAuthSecret } from './src/crypto.ts';
export { isRuntimeError, RuntimeError, RuntimeErrorCodes } from './src/errors.ts';
export type { RuntimeErrorCode } from './src/errors.ts';
export { EncryptedStore } from './src/store/index.ts';
export type { EncryptedStoreOptions, StoreCollection } from './src/store/index.ts';
