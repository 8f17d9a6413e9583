// The sandbox's environments. The container's (seen by tini and the root sidecar) holds only the
// platform's variables; the user's (base config merged with phase-2 secrets, secrets win) is
// delivered to the sidecar over its authenticated API and reaches only the agent's children.
import { platformOwnedReason } from '@agent-sandbox/platform-names';
import { z } from 'zod';
import { invalidField, RuntimeError } from '../errors.ts';

export const WORKSPACE_ROOT = '/home/agent';
export const AGENT_UID = '1000';

/**
 * Keys a user's env can never set. The token is the sidecar's only auth; the subprocess uid/gid
 * keep commands off root (letting a user pick uid 0 would run agents as root inside the sandbox).
 */
export const PROTECTED_ENV_KEYS: ReadonlySet<string> = new Set([
  'SIDECAR_AUTH_TOKEN',
  'AGENT_SUBPROCESS_UID',
  'AGENT_SUBPROCESS_GID',
]);

// Names the platform owns (they configure the sidecar or load code into processes) are refused in
// every user env with the key named, so a user learns at once instead of setting something that
// never takes effect. The sidecar refuses the same names again (one list: @agent-sandbox/platform-names).
export {
  PLATFORM_ENV_NAMES,
  PLATFORM_ENV_PREFIXES,
  platformOwnedReason,
} from '@agent-sandbox/platform-names';

const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_SECRET_KEYS = 256;
export const MAX_KEY_LEN = 256;
export const MAX_VALUE_BYTES = 64 * 1024;

const EnvValue = z
  .string()
  .refine((v) => Buffer.byteLength(v) <= MAX_VALUE_BYTES, `env values are at most ${MAX_VALUE_BYTES} bytes`)
  .refine((v) => !v.includes('\0'), 'env values cannot contain NUL');

export const UserEnvSchema = z.record(z.string(), EnvValue);

/** Validates a user env (base config or secrets); `what` names it in the error. */
export function parseUserEnv(
  input: unknown,
  what: string,
  opts: { minKeys?: number } = {},
): Record<string, string> {
  const r = UserEnvSchema.safeParse(input ?? {});
  if (!r.success) {
    const i = r.error.issues[0];
    const key = i?.path.length ? String(i.path[0]).slice(0, 64) : undefined;
    const where = key ? ` "${key}"` : '';
    // Never echo a value: it may be a secret.
    const reason = i?.message ?? 'invalid';
    throw invalidField(key ? `${what}.${key}` : what, reason, `${what}${where}: ${reason}`);
  }
  for (const k of Object.keys(r.data)) {
    const bad =
      k.length > MAX_KEY_LEN
        ? `env names are at most ${MAX_KEY_LEN} characters`
        : !ENV_KEY_RE.test(k)
          ? 'env names are letters, digits and _ and do not start with a digit'
          : PROTECTED_ENV_KEYS.has(k)
            ? 'is set by the operator and cannot be overridden'
            : platformOwnedReason(k);
    if (bad) throw invalidField(`${what}.${k.slice(0, 64)}`, bad, `${what} "${k.slice(0, 64)}": ${bad}`);
  }
  const n = Object.keys(r.data).length;
  if (n > MAX_SECRET_KEYS)
    throw invalidField(
      what,
      `has ${n} keys; at most ${MAX_SECRET_KEYS}`,
      `${what} has ${n} keys; at most ${MAX_SECRET_KEYS}`,
    );
  if (opts.minKeys && n < opts.minKeys) {
    throw invalidField(
      what,
      `needs at least ${opts.minKeys} key`,
      `${what} needs at least ${opts.minKeys} key`,
    );
  }
  return r.data;
}

/** Secrets over base config: a secret with the same name wins. */
export function mergeEnv(
  baseEnv: Record<string, string>,
  userEnv: Record<string, string>,
): Record<string, string> {
  return { ...baseEnv, ...userEnv };
}

/** The platform's variables only: no user value ever reaches tini or the root sidecar. */
export function containerEnv(p: {
  token: string;
  sidecarPort: number;
  /** The sidecar listens on this socket instead of the port (sandboxes without a network). */
  socketPath?: string;
}): Record<string, string> {
  return {
    SIDECAR_PORT: String(p.sidecarPort),
    ...(p.socketPath ? { SIDECAR_SOCKET: p.socketPath } : {}),
    AGENT_WORKSPACE_ROOT: WORKSPACE_ROOT,
    AGENT_SUBPROCESS_UID: AGENT_UID,
    AGENT_SUBPROCESS_GID: AGENT_UID,
    SIDECAR_AUTH_TOKEN: p.token,
  };
}
