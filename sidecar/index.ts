// @agent-sandbox/sidecar: public door of the package — the sandbox image builder and the sidecar server.

export { SidecarError } from './src/errors.ts';
export { baseImageTag } from './src/image/base-image.ts';
export type { EnsureSandboxImageOptions, SandboxImage } from './src/image/sandbox-image.ts';
export { ensureSandboxImage, sandboxImageTag } from './src/image/sandbox-image.ts';
