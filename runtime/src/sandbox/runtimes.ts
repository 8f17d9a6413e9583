// The OCI runtime a sandbox's container runs under: `runc` (namespaces, seccomp, capabilities on
// the host kernel) or `runsc` (gVisor: a user-space kernel between the sandbox and the host). The
// operator picks the default (SANDBOX_RUNTIME) and which others a create may ask for
// (SANDBOX_RUNTIMES_ALLOWED); a sandbox keeps its runtime for life (stop, resume, recreate, tiers).
import { z } from 'zod';
import { invalidField, RuntimeError } from '../errors.ts';

export const SANDBOX_RUNTIMES = ['runc', 'runsc'] as const;
export type SandboxRuntime = (typeof SANDBOX_RUNTIMES)[number];
export const SandboxRuntimeSchema = z.enum(SANDBOX_RUNTIMES);

/** The runtimes a create may name: the default first, then the allowed others. */
export function offeredRuntimes(cfg: {
  runtime: SandboxRuntime;
  runtimesAllowed: readonly SandboxRuntime[];
}) {
  return [...new Set<SandboxRuntime>([cfg.runtime, ...cfg.runtimesAllowed])];
}

/** A record's runtime (records from before runtimes existed ran under runc). */
export function runtimeOf(r: { runtime?: SandboxRuntime | undefined }): SandboxRuntime {
  return r.runtime ?? 'runc';
}

/** `SANDBOX_RUNTIMES_ALLOWED`: a comma-separated list of runtime names. */
export function parseRuntimeList(raw: string): SandboxRuntime[] {
  const out: SandboxRuntime[] = [];
  for (const part of raw.split(',')) {
    const name = part.trim();
    if (!name) continue;
    const r = SandboxRuntimeSchema.safeParse(name);
    if (!r.success) {
      throw new RuntimeError(
        'VALIDATION',
        `SANDBOX_RUNTIMES_ALLOWED: unknown runtime "${name}"; the runtimes are ${SANDBOX_RUNTIMES.join(', ')}`,
      );
    }
    out.push(r.data);
  }
  return out;
}

/**
 * The runtime a create gets: the one it names when this operator offers it, else the default.
 * A runtime the operator does not offer is refused with the offered ones named.
 */
export function resolveRuntime(
  asked: SandboxRuntime | undefined,
  cfg: { runtime: SandboxRuntime; runtimesAllowed: readonly SandboxRuntime[] },
): SandboxRuntime {
  if (asked === undefined) return cfg.runtime;
  const offered = offeredRuntimes(cfg);
  if (!offered.includes(asked)) {
    throw invalidField(
      'runtime',
      `${asked} is not offered by this operator (it runs ${offered.join(', ')}); create without a runtime or with one of those`,
      `runtime ${asked} is not offered by this operator (it runs ${offered.join(', ')}: SANDBOX_RUNTIMES_ALLOWED); create without a runtime or with one of those`,
    );
  }
  return asked;
}

const NO_SOCKET_UNDER_RUNSC =
  "gVisor's sandbox cannot give the sidecar's Unix socket the 0600 mode a SANDBOX_EGRESS=none sidecar sets (chmod of a socket on a host mount is refused), so the sidecar does not start";

/**
 * What gVisor (runsc 0.0~20221219, Debian bookworm's, the runtime scripts/register-runsc.mjs
 * registers) cannot do that a sandbox of this operator would need, refused rather than failing
 * later: SANDBOX_EGRESS=none (the sidecar on a Unix socket in a host directory). Everything else
 * (egress public with its rules, loop-disk workspaces, read-only root, tmpfs, the warm pool,
 * commit/archive, secrets) runs under runsc and is tested (*.runsc.test.ts).
 */
export function refuseUnsupported(runtime: SandboxRuntime, cfg: { egress: string }): void {
  if (runtime === 'runsc' && cfg.egress === 'none') {
    throw invalidField(
      'runtime',
      `runsc cannot run under SANDBOX_EGRESS=none: ${NO_SOCKET_UNDER_RUNSC}; create with runtime runc`,
      `runtime runsc cannot run under this operator's SANDBOX_EGRESS=none: ${NO_SOCKET_UNDER_RUNSC}; create with runtime runc`,
    );
  }
}

/** The operator's own settings: a runtime it offers must work under its egress policy. */
export function refuseRuntimeConfig(cfg: {
  runtime: SandboxRuntime;
  runtimesAllowed: readonly SandboxRuntime[];
  egress: string;
}): void {
  if (cfg.egress === 'none' && offeredRuntimes(cfg).includes('runsc')) {
    throw new RuntimeError(
      'VALIDATION',
      `invalid sandbox runtime config: SANDBOX_RUNTIME / SANDBOX_RUNTIMES_ALLOWED offer runsc, which cannot run under SANDBOX_EGRESS=none (${NO_SOCKET_UNDER_RUNSC}); use runc, or egress public`,
    );
  }
}

/** At open: every runtime offered is one the engine has (docker info `Runtimes`). */
export async function checkEngineRuntimes(
  docker: { info(): Promise<{ Runtimes?: Record<string, unknown> }> },
  cfg: { runtime: SandboxRuntime; runtimesAllowed: readonly SandboxRuntime[] },
): Promise<void> {
  const offered = offeredRuntimes(cfg);
  if (offered.every((r) => r === 'runc')) return;
  const info = await docker.info();
  assertEngineRuntimes(Object.keys(info.Runtimes ?? {}), offered);
}

export function assertEngineRuntimes(
  engineRuntimes: readonly string[],
  offered: readonly SandboxRuntime[],
): void {
  const missing = offered.filter((r) => r !== 'runc' && !engineRuntimes.includes(r));
  if (missing.length > 0) {
    throw new RuntimeError(
      'CONFIG_INVALID',
      `SANDBOX_RUNTIME / SANDBOX_RUNTIMES_ALLOWED name ${missing.join(', ')}, which the Docker engine does not have (it has ${engineRuntimes.join(', ') || 'none listed'}); run scripts/ensure-toolchain.sh as root (installs gVisor's runsc and registers it), or drop it from the list`,
    );
  }
}
