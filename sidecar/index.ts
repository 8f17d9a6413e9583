// @agent-sandbox/sidecar: public door of the package — the sidecar server that runs inside each
// sandbox container. The host-side image builder that bundles it is @agent-sandbox/sandbox-image.
import { fileURLToPath } from 'node:url';

export {
  PLATFORM_ENV_NAMES,
  PLATFORM_ENV_PREFIXES,
  platformOwnedReason,
} from '@agent-sandbox/platform-names';
export { HARNESS_SUPPORTS, HARNESSES, type HarnessName } from './src/agents/harness.ts';
export { SidecarError } from './src/errors.ts';

/** The sidecar program's entry file, which the image builder bundles into the container. */
export const SIDECAR_ENTRY = fileURLToPath(new URL('./src/main.ts', import.meta.url));
