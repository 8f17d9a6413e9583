// Public surface of the encrypted persistent store.

export type { EncryptedStoreOptions, StoreCollection, StoreWrite } from './store.ts';
export { EncryptedStore } from './store.ts';
