// @agent-sandbox/runtime/testing: test-only door of the runtime (never imported by product code).
export { FakeTsmFirmware, type FakeTsmOptions } from './src/tee/testing/fake-tsm.ts';
