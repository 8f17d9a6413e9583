// @agent-sandbox/sdk: the product-agnostic Tangle blueprint SDK (env, keystore, ABI args/results,
// router, durable cursor, event producer, result consumer, runner, registration).
export * from './src/env.ts';
export * from './src/errors.ts';
export * from './src/job-abi.ts';
export * from './src/job-cursor.ts';
export * from './src/keystore.ts';
export * from './src/router.ts';
