import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:real-tangle`: a stated subset of the suite against tnt-core 0.19's real contracts
// (scripts/test-real-tangle.ts names the files and explains the two input files). Not part of
// `npm test` or CI, which keep the stand-in LocalTangle.
export const REAL_TANGLE_TESTS = [
  'test/e2e/operator.test.ts',
  'test/e2e/instance.test.ts',
  'test/e2e/roles.test.ts',
  'test/devnet.test.ts',
  'test/create-gas.test.ts',
  'test/tangle-conformance.test.ts',
  'scripts/demo/instance.test.ts',
];

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: process.env['REAL_TANGLE_TESTS']?.split(',') ?? REAL_TANGLE_TESTS,
    globalSetup: ['test/global-setup-real-tangle.ts'],
  },
});
