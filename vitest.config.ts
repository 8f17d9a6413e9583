import { defineConfig } from 'vitest/config';

// One runner for every TypeScript test in the workspace. Tests that need the chain share one
// devnet started by test/global-setup.ts; the sandbox image is built once before vitest runs.
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', 'contracts/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default'],
  },
});
