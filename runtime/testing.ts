// @agent-sandbox/runtime/testing: test-only door of the runtime (never imported by product code).

export { type Harness, startHarness } from './src/api/testing/harness.ts';
export {
  type LocalRegistry,
  plainStage,
  slowLink,
  startLocalRegistry,
} from './src/sandbox/testing/local-registry.ts';
export {
  makeRig,
  removeOperatorObjects,
  sidecarExec,
  TEST_LABELS,
  type TestRig,
} from './src/sandbox/testing/rig.ts';
export { FAKE_PHALA_API_KEY, type FakePhala, startFakePhala } from './src/tee/testing/fake-phala.ts';
export { FakeTsmFirmware, type FakeTsmOptions } from './src/tee/testing/fake-tsm.ts';
export { startWiretap, type Wiretap } from './src/tee/testing/wiretap.ts';
