import { defineConfig } from 'vitest/config';

// Tests that must run alone (they restart the Docker engine, which breaks any test using it at
// the same moment): `*.serial-test.ts`, one fork, after the main run (scripts/test.sh).
export default defineConfig({
  test: {
    include: ['**/*.serial-test.ts'],
    exclude: ['**/node_modules/**', 'contracts/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    fileParallelism: false,
    reporters: ['default'],
  },
});
