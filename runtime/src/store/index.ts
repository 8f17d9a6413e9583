// Public surface of the encrypted persistent store.

export type { EncryptedStoreOptions, StoreCollection } from './store.ts';
export { EncryptedStore } from './store.ts';
