// The sandbox user's environment (create env and secrets), delivered by the operator over the
// authenticated PUT /env and kept in this process's memory only: it is handed to the agent's
// children, never applied to the sidecar (root) nor written to the container's config or disk.

/**
 * Names the platform owns. A user value under one of them would configure the sidecar or load code
 * into processes (the dynamic loader, Node, bash start-up files); the operator refuses them at its
 * edge (runtime/src/sandbox/env.ts holds the same list) and the sidecar refuses them again here.
 */
export const PLATFORM_ENV_PREFIXES = ['SIDECAR_', 'AGENT_', 'LD_', 'DYLD_'] as const;
export const PLATFORM_ENV_NAMES: ReadonlySet<string> = new Set([
  'NODE_OPTIONS',
  'NODE_PATH',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'GCONV_PATH',
  'HOSTALIASES',
  'LOCPATH',
]);

/** Why `name` cannot come from a user, or undefined when it can. */
export function platformOwnedReason(name: string): string | undefined {
  const prefix = PLATFORM_ENV_PREFIXES.find((p) => name.startsWith(p));
  if (prefix) return `names starting with ${prefix} are owned by the platform; pick another name`;
  if (PLATFORM_ENV_NAMES.has(name)) return `${name} is owned by the platform; pick another name`;
  return undefined;
}

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
