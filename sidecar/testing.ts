// @agent-sandbox/sidecar/testing: test-only door of the sidecar (never imported by product code).

export { DSTACK_SAMPLE, type FakeDstack, startFakeDstack } from './src/testing/fake-dstack.ts';
export { ownerChannel, type RelayedChannel } from './src/testing/owner-channel.ts';
export {
  probeHealth,
  type SandboxContainer,
  startSandboxContainer,
  waitHealthy,
} from './src/testing/sandbox-container.ts';
export {
  readSse,
  type SidecarFixture,
  type SseFrame,
  startSidecarFixture,
} from './src/testing/sidecar-fixture.ts';
