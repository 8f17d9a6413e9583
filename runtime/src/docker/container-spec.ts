// Builds the Docker create options for a sandbox container: sidecar env, resource limits,
// loopback-only port publishing (or, with no network, a socket directory), labels, and the
// hardening every sandbox gets.
import type Docker from 'dockerode';
import {
  KIT_CMD,
  KIT_ENTRYPOINT,
  KIT_ENV,
  KIT_MOUNT,
  KIT_NODE_SHARE,
  kitShareVolume,
} from './sidecar-kit.ts';
import { SOCKET_MOUNT } from './sidecar-socket.ts';

/**
 * Capabilities the sidecar keeps after CapDrop ALL — the minimum found by running the real
 * sidecar image with each one removed in turn (exec, exec timeout, files write/read, PTY):
 * - SETUID, SETGID: the sidecar (root) spawns every command, PTY and agent as uid/gid 1000;
 *   without them every spawn fails with EPERM.
 * - CHOWN: files/write creates directories and files and hands them to 1000:1000; without it
 *   writes to new paths fail.
 * - DAC_OVERRIDE: the files API reads agent-owned files whatever their mode (e.g. 0600 in a
 *   0700 dir); without it those reads are refused.
 * - KILL: the exec timeout (TERM, then KILL) and run cancel signal processes of uid 1000; without
 *   it a timed-out command is never stopped.
 * FOWNER was tested and is not needed; everything else (NET_RAW, MKNOD, SYS_CHROOT, AUDIT_WRITE,
 * NET_BIND_SERVICE, SETFCAP, SETPCAP, FSETID) is dropped.
 */
export const SIDECAR_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'KILL', 'SETGID', 'SETUID'] as const;

export const WORKSPACE_PATH = '/home/agent';

export interface ContainerSpecInput {
  name: string;
  image: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  volumeName: string;
  volumeLabels: Record<string, string>;
  sidecarPort: number;
  cpuCores: number;
  memoryMb: number;
  diskGb: number;
  /** Only set StorageOpt when the storage driver can enforce it (probed once). */
  enforceDisk: boolean;
  /** The workspace volume is a size-limited loop disk (docker/loop-disk.ts) of diskGb. */
  workspaceDisk?: boolean;
  /** Set by the driver for workspaceDisk: the block device the volume mounts (ext4). */
  volumeDevice?: string;
  pidsLimit: number;
  tmpfsSizeMb: number;
  capAdd?: readonly string[];
  /** Extra container ports, each published like the sidecar's: 127.0.0.1, engine-chosen port. */
  exposedPorts?: readonly number[];
  /** The sandbox network to join (undefined: the engine's default bridge; 'none': loopback only). */
  networkName?: string | undefined;
  /** The container's MAC on that network (a policed sandbox's rules are keyed by it). */
  macAddress?: string | undefined;
  /** Resolvers the engine's embedded DNS forwards to (a policed sandbox: its network's gateway). */
  dns?: string[] | undefined;
  /**
   * With networkName 'none': the host directory mounted at SOCKET_MOUNT, where the sidecar
   * listens (no port is published: there is no interface to publish it on).
   */
  socketDir?: string | undefined;
  /** The engine's OCI runtime name (runc, runsc); undefined: the engine's default. */
  runtime?: string | undefined;
  /** Overrides the image's command (tests only: a sidecar that never becomes healthy). */
  cmd?: string[];
  /**
   * The image does not carry the sidecar (a registry image): it runs from the kit volume
   * (sidecar-kit.ts), and the image's entrypoint, command, user, workdir, healthcheck and env
   * are overridden; `imageEnv` (its ENV) reaches the agent's processes only.
   */
  mountedSidecar?: { kitVolume: string; imageEnv: readonly string[] } | undefined;
}

/** Image env names the agent's processes never get from an image: the sidecar's and ours. */
function imageEnvForChildren(imageEnv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of imageEnv) {
    const i = kv.indexOf('=');
    const k = i < 0 ? kv : kv.slice(0, i);
    const val = i < 0 ? '' : kv.slice(i + 1);
    // Empty: a key a snapshot commit blanked (ours), or nothing worth passing on.
    if (!k || !val || k.startsWith('SIDECAR_') || k.startsWith('AGENT_')) continue;
    out[k] = val;
  }
  return out;
}

/**
 * The container env of a mounted-sidecar sandbox. The engine merges the image's ENV into every
 * container's and cannot drop a key, so each of the image's keys is set empty (LD_PRELOAD,
 * NODE_OPTIONS, LD_LIBRARY_PATH … reach tini and the root sidecar empty); their values travel in
 * SIDECAR_IMAGE_ENV, which the sidecar gives only to the agent's processes.
 */
function mountedSidecarEnv(own: Record<string, string>, imageEnv: readonly string[]): Record<string, string> {
  const blanks: Record<string, string> = {};
  for (const kv of imageEnv) {
    const k = kv.split('=')[0]!;
    if (k) blanks[k] = '';
  }
  return {
    ...blanks,
    ...KIT_ENV,
    ...own,
    SIDECAR_IMAGE_ENV: JSON.stringify(imageEnvForChildren(imageEnv)),
  };
}

export function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

export function buildContainerSpec(s: ContainerSpecInput): Docker.ContainerCreateOptions {
  const port = `${s.sidecarPort}/tcp`;
  const isolated = s.networkName === 'none';
  const ports = isolated ? [] : [port, ...(s.exposedPorts ?? []).map((p) => `${p}/tcp`)];
  const memory = s.memoryMb * 1024 * 1024;
  const hostConfig: Docker.HostConfig = {
    NanoCpus: Math.round(s.cpuCores * 1e9),
    Memory: memory,
    // Same as Memory: no swap beyond the limit.
    MemorySwap: memory,
    PidsLimit: s.pidsLimit,
    // Empty HostPort = the engine picks a free one; HostIp keeps it on loopback only.
    PortBindings: Object.fromEntries(ports.map((p) => [p, [{ HostIp: '127.0.0.1', HostPort: '' }]])),
    CapDrop: ['ALL'],
    CapAdd: [...(s.capAdd ?? SIDECAR_CAPS)],
    SecurityOpt: ['no-new-privileges:true'],
    Privileged: false,
    // No Init: the sandbox image's entrypoint is already tini (a second one only warns).
    // The root filesystem (sidecar code, tini, system files) cannot be changed by anyone in the
    // container, root included; writable are the workspace volume and these size-capped tmpfs.
    ReadonlyRootfs: true,
    Tmpfs: {
      '/tmp': `rw,nosuid,nodev,size=${s.tmpfsSizeMb}m`,
      '/var/tmp': `rw,nosuid,nodev,size=${Math.max(16, Math.floor(s.tmpfsSizeMb / 4))}m`,
    },
    // A named volume per sandbox (never a host path): it outlives container recreates.
    Mounts: [
      {
        Type: 'volume',
        Source: s.volumeName,
        Target: WORKSPACE_PATH,
        VolumeOptions: {
          Labels: s.volumeLabels,
          // A registry image's /home/agent is not copied into the workspace (its files, set-uid
          // ones included, stay out of the only writable disk); the sidecar makes it the agent's.
          ...(s.mountedSidecar ? { NoCopy: true } : {}),
          // Used only when the engine creates the volume (first create, or after warm/cold).
          ...(s.volumeDevice
            ? {
                DriverConfig: {
                  Name: 'local',
                  // nosuid: a set-uid file planted in the workspace (a restored archive, an agent
                  // with root) gives nobody its owner's uid; nodev: a device node in it opens nothing.
                  Options: { type: 'ext4', device: s.volumeDevice, o: 'nosuid,nodev' },
                },
              }
            : {}),
        },
      } as unknown as Docker.MountSettings,
      ...(isolated && s.socketDir
        ? [{ Type: 'bind', Source: s.socketDir, Target: SOCKET_MOUNT } as Docker.MountSettings]
        : []),
      ...(s.mountedSidecar
        ? [
            {
              Type: 'volume',
              Source: s.mountedSidecar.kitVolume,
              Target: KIT_MOUNT,
              ReadOnly: true,
              VolumeOptions: { NoCopy: true },
            } as unknown as Docker.MountSettings,
            {
              Type: 'volume',
              Source: kitShareVolume(s.mountedSidecar.kitVolume),
              Target: KIT_NODE_SHARE,
              ReadOnly: true,
              VolumeOptions: { NoCopy: true },
            } as unknown as Docker.MountSettings,
          ]
        : []),
    ],
    RestartPolicy: { Name: 'no' },
    ...(s.runtime ? { Runtime: s.runtime } : {}),
    ...(s.networkName ? { NetworkMode: s.networkName } : {}),
    // The sandbox networks (public, none) have no IPv6: switch it off in the sandbox's namespace,
    // so no address or route appears there (a router advertisement on the bridge, an engine that
    // leaves IPv6 on) that the IPv4-only egress rules would not see, such as AWS's fd00:ec2::254.
    // The default bridge (open) is the engine's to configure.
    ...(s.networkName
      ? { Sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' } }
      : {}),
    LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
  };
  if (s.enforceDisk) hostConfig.StorageOpt = { size: `${s.diskGb}G` };
  if (s.dns?.length) hostConfig.Dns = s.dns;
  const opts: Docker.ContainerCreateOptions = {
    name: s.name,
    Image: s.image,
    Env: envList(s.mountedSidecar ? mountedSidecarEnv(s.env, s.mountedSidecar.imageEnv) : s.env),
    Labels: s.labels,
    ExposedPorts: Object.fromEntries(ports.map((p) => [p, {}])),
    HostConfig: hostConfig,
  };
  if (s.mountedSidecar) {
    // Nothing of the image's own runs as root: not its entrypoint, command or healthcheck (the
    // engine runs a HEALTHCHECK as the container's user), and the user is ours, by number.
    opts.Entrypoint = KIT_ENTRYPOINT;
    opts.Cmd = KIT_CMD;
    opts.User = '0:0';
    opts.WorkingDir = WORKSPACE_PATH;
    opts.Healthcheck = { Test: ['NONE'] };
    opts.StopSignal = 'SIGTERM';
  }
  if (s.cmd) opts.Cmd = s.cmd;
  if (s.macAddress) opts.MacAddress = s.macAddress;
  return opts;
}
