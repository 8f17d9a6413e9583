// @agent-sandbox/blueprint-lib/testing: test-only door of blueprint-lib (never imported by product code).
export { testCreateInput, testCreateRequest } from './src/testing/create-input.ts';
export { DevnetJobs } from './src/testing/devnet-service.ts';
export {
  openTestRuntime,
  TEST_LABELS,
  type TestRuntime,
  type TestRuntimeOptions,
} from './src/testing/test-runtime.ts';
