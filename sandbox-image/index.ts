// @agent-sandbox/sandbox-image: public door of the package — the host-side builder of the sandbox
// image (Debian base by debootstrap, then the bundled sidecar and agent harnesses), tagged by content hash.

/** The harness CLIs the harness image carries and which `task` options each honours. */
export { HARNESS_SUPPORTS } from '@agent-sandbox/sidecar';
export { baseImageTag } from './src/base-image.ts';
export type { EnsureSandboxImageOptions, SandboxImage } from './src/sandbox-image.ts';
export { ensureSandboxImage, sandboxImageTag } from './src/sandbox-image.ts';
