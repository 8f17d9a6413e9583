// @agent-sandbox/sdk: the product-agnostic Tangle blueprint SDK (env, keystore, ABI args/results,
// router, durable cursor, event producer, result consumer, runner, registration).

export * from './src/backoff.ts';
export * from './src/blueprint-definition.ts';
export * from './src/consumer.ts';
export * from './src/env.ts';
export * from './src/errors.ts';
export * from './src/job-abi.ts';
export * from './src/job-cursor.ts';
export * from './src/job-router.ts';
export * from './src/keystore.ts';
export * from './src/logger.ts';
export * from './src/producer.ts';
export * from './src/registration.ts';
export * from './src/roles/blueprints.ts';
export * from './src/roles/services.ts';
export * from './src/roles/staking.ts';
export * from './src/roles/tx.ts';
export * from './src/runner.ts';
export * from './src/runner-options.ts';
export * from './src/tangle-events.ts';
export * from './src/tx-errors.ts';
