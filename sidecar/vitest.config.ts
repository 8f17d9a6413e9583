import { defineConfig } from 'vitest/config';

// Runs only the sidecar's tests, with only the image fixture (`npx vitest run -c sidecar/vitest.config.ts`).
// The root config runs the same files within the whole suite.
export default defineConfig({
  root: new URL('..', import.meta.url).pathname,
  test: {
    include: ['sidecar/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    globalSetup: ['sandbox-image/src/testing/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
