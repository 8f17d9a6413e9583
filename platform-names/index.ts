// @agent-sandbox/platform-names: the names the sandbox platform owns, shared by the sidecar (inside
// the sandbox) and the runtime (the operator's edge) without either depending on the other. Pure,
// no dependencies (like @agent-sandbox/errors), so the sidecar's image bundle stays small.
export { HARNESSES, type HarnessName } from './src/harnesses.ts';
export { PLATFORM_ENV_NAMES, PLATFORM_ENV_PREFIXES, platformOwnedReason } from './src/platform-env.ts';
