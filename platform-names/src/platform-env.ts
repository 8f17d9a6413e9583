// The environment names the platform owns: one list for the sidecar and the operator.

/**
 * Names the platform owns. A user value under one of them would configure the sidecar or load code
 * into processes (the dynamic loader, Node, bash start-up files). The operator refuses them at its
 * edge (runtime/src/sandbox/env.ts) and the sidecar refuses them again.
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
