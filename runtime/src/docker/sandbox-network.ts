// The bridge network sandboxes join under an egress policy: one per policy on the engine, with
// inter-container traffic off (ICC=false, so a sandbox never reaches another directly) and a
// fixed bridge interface name the egress rules match on. Shared by every operator on the engine
// (a network per operator or per sandbox would exhaust the engine's address pools; the bench in
// bench/network.bench.ts measures the per-sandbox alternative).
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { dockerMessage, dockerStatus } from './driver.ts';
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from './labels.ts';

/**
 * public: internet only; none: Docker's `none` network (no interface but loopback, the sidecar on
 * a Unix socket); open: Docker's default bridge, no rules.
 */
export type EgressPolicy = 'public' | 'none' | 'open';
export const EGRESS_POLICIES = ['public', 'none', 'open'] as const;

export interface SandboxNetwork {
  /** Docker network name ('none': loopback only), or undefined for the engine's default bridge (egress open). */
  name: string | undefined;
  /** Host-side bridge interface (rules match on it), or undefined for the default bridge. */
  bridge: string | undefined;
  /** The bridge's gateway address on the host (undefined for the default bridge). */
  gateway: string | undefined;
}

/** `policy`: the bridge of sandboxes with a network policy of their own (sandbox/egress-policy). */
export function sandboxNetworkNames(policy: 'public' | 'policy'): { name: string; bridge: string } {
  return { name: `agent-sandbox-${policy}`, bridge: `asbx-${policy}` };
}

const ICC = 'com.docker.network.bridge.enable_icc';
const BRIDGE_NAME = 'com.docker.network.bridge.name';

type NetworkInfo = { Options?: Record<string, string>; IPAM?: { Config?: Array<{ Gateway?: string }> } };

async function inspectNetwork(docker: Docker, name: string): Promise<NetworkInfo | undefined> {
  try {
    return (await docker.getNetwork(name).inspect()) as NetworkInfo;
  } catch (e) {
    if (dockerStatus(e) === 404) return undefined;
    throw new RuntimeError('DOCKER_ERROR', `could not inspect network ${name}: ${dockerMessage(e)}`, {
      cause: e,
    });
  }
}

/**
 * Creates the policy's network if missing and checks an existing one. Idempotent; when two
 * operators create it at once, the loser's error is ignored if the network is there afterwards.
 */
export async function ensureSandboxNetwork(docker: Docker, policy: EgressPolicy): Promise<SandboxNetwork> {
  if (policy === 'open') return { name: undefined, bridge: undefined, gateway: undefined };
  // No bridge, no rules: the container gets no interface to send anything on.
  if (policy === 'none') return { name: 'none', bridge: undefined, gateway: undefined };
  return ensureBridgeNetwork(docker, policy);
}

/** Creates (or checks) one of the sandbox bridges: ICC off, a fixed bridge interface name. */
export async function ensureBridgeNetwork(
  docker: Docker,
  policy: 'public' | 'policy',
): Promise<SandboxNetwork> {
  const { name, bridge } = sandboxNetworkNames(policy);
  let info = await inspectNetwork(docker, name);
  if (!info) {
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Options: { [ICC]: 'false', [BRIDGE_NAME]: bridge },
        Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, 'agent-sandbox.egress': policy },
      });
    } catch (e) {
      if (!(await inspectNetwork(docker, name))) {
        throw new RuntimeError('DOCKER_ERROR', `could not create network ${name}: ${dockerMessage(e)}`, {
          cause: e,
        });
      }
    }
    info = await inspectNetwork(docker, name);
  }
  if (info?.Options?.[ICC] !== 'false' || info.Options?.[BRIDGE_NAME] !== bridge) {
    throw new RuntimeError(
      'DOCKER_ERROR',
      `network ${name} exists without inter-container traffic off on bridge ${bridge}; remove it (docker network rm ${name}) and start again`,
    );
  }
  return { name, bridge, gateway: info.IPAM?.Config?.[0]?.Gateway };
}
