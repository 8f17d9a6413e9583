// The sandbox user's environment (create env and secrets), delivered by the operator over the
// authenticated PUT /env and kept in this process's memory only: it is handed to the agent's
// children, never applied to the sidecar (root) nor written to the container's config or disk.

import { platformOwnedReason } from '@agent-sandbox/platform-names';

export {
  PLATFORM_ENV_NAMES,
  PLATFORM_ENV_PREFIXES,
  platformOwnedReason,
} from '@agent-sandbox/platform-names';

/** The first platform-owned key of `env` with its reason, or undefined. */
export function firstPlatformOwned(env: Record<string, string>): { key: string; reason: string } | undefined {
  for (const key of Object.keys(env)) {
    const reason = platformOwnedReason(key);
    if (reason) return { key, reason };
  }
  return undefined;
}

/** The user env a user may name as the agent program (run by bash -lc as the agent user). */
export const USER_AGENT_COMMAND_KEY = 'SANDBOX_AGENT_COMMAND';

export class UserEnv {
  #env: Readonly<Record<string, string>> = {};
  /** Secrets opened inside the TEE (POST /tee/sealed-secrets): the operator never saw them. */
  #sealed: Readonly<Record<string, string>> = {};

  /** Replaces the whole user env (a delivery is always complete: secrets wiped are gone). */
  replace(env: Record<string, string>): void {
    this.#env = Object.freeze({ ...env });
  }

  /** Adds sealed secrets; an operator delivery (replace) does not remove them, and they win over it. */
  addSealed(env: Record<string, string>): void {
    this.#sealed = Object.freeze({ ...this.#sealed, ...env });
  }

  get current(): Readonly<Record<string, string>> {
    if (Object.keys(this.#sealed).length === 0) return this.#env;
    return Object.freeze({ ...this.#env, ...this.#sealed });
  }
}
