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
/** The full app (everything behind /health and PUT /env), bundled apart and loaded after them. */
export const SIDECAR_APP_ENTRY = fileURLToPath(new URL('./src/app.ts', import.meta.url));
/** The boot's loader of the app (src/app-module.ts), which the bundle replaces with a require. */
export const SIDECAR_APP_MODULE = fileURLToPath(new URL('./src/app-module.ts', import.meta.url));
