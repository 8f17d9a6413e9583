// @agent-sandbox/sandbox-image/testing: test-only door — the vitest global setup that builds (or reuses) the image.
export { default, setupImage } from './src/testing/global-setup.ts';
