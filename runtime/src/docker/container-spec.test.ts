// The container spec every sandbox gets: loopback-only ports, hardening, resources, no host paths.
import { describe, expect, it } from 'vitest';
import { buildContainerSpec, SIDECAR_CAPS } from './container-spec.ts';

const input = {
  name: 'agent-sandbox-sbx-1',
  image: 'img:1',
  env: { SIDECAR_PORT: '8080', SIDECAR_AUTH_TOKEN: 'tok' },
  labels: { a: 'b' },
  volumeName: 'agent-sandbox-ws-sbx-1',
  volumeLabels: { a: 'b' },
  sidecarPort: 8080,
  cpuCores: 1.5,
  memoryMb: 512,
  diskGb: 5,
  enforceDisk: false,
  pidsLimit: 256,
  tmpfsSizeMb: 64,
};
const spec = buildContainerSpec(input);

describe('buildContainerSpec', () => {
  it('publishes the sidecar port on 127.0.0.1 only, on an engine-chosen port', () => {
    expect(spec.HostConfig?.PortBindings).toEqual({ '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] });
  });
  it('publishes extra exposed ports like the sidecar: 127.0.0.1 only, engine-chosen host ports', () => {
    const s = buildContainerSpec({ ...input, exposedPorts: [3000, 5173] });
    const loopback = [{ HostIp: '127.0.0.1', HostPort: '' }];
    expect(s.HostConfig?.PortBindings).toEqual({
      '8080/tcp': loopback,
      '3000/tcp': loopback,
      '5173/tcp': loopback,
    });
    expect(s.ExposedPorts).toEqual({ '8080/tcp': {}, '3000/tcp': {}, '5173/tcp': {} });
  });
  it('drops every capability but the sidecar minimum, and hardens the rest', () => {
    const hc = spec.HostConfig!;
    expect(hc.CapDrop).toEqual(['ALL']);
    expect(hc.CapAdd).toEqual([...SIDECAR_CAPS]);
    expect(hc.SecurityOpt).toEqual(['no-new-privileges:true']);
    expect(hc.Privileged).toBe(false);
    expect(hc.Binds).toBeUndefined();
    expect(hc.Mounts).toEqual([
      expect.objectContaining({ Type: 'volume', Source: 'agent-sandbox-ws-sbx-1', Target: '/home/agent' }),
    ]);
    expect(hc.Tmpfs).toEqual({
      '/tmp': 'rw,nosuid,nodev,size=64m',
      '/var/tmp': 'rw,nosuid,nodev,size=16m',
    });
    expect(hc.ReadonlyRootfs).toBe(true);
  });
  it('maps resources; disk only when the driver can enforce it', () => {
    const hc = spec.HostConfig!;
    expect(hc.NanoCpus).toBe(1.5e9);
    expect(hc.Memory).toBe(512 * 1024 * 1024);
    expect(hc.MemorySwap).toBe(hc.Memory);
    expect(hc.PidsLimit).toBe(256);
    expect(hc.StorageOpt).toBeUndefined();
    const withDisk = buildContainerSpec({
      name: 'n',
      image: 'i',
      env: {},
      labels: {},
      volumeName: 'v',
      volumeLabels: {},
      sidecarPort: 8080,
      cpuCores: 1,
      memoryMb: 256,
      diskGb: 5,
      enforceDisk: true,
      pidsLimit: 1,
      tmpfsSizeMb: 1,
    });
    expect(withDisk.HostConfig?.StorageOpt).toEqual({ size: '5G' });
  });
  it('on the sandbox networks (public, none) IPv6 is off in the namespace; the default bridge (open) is left to the engine', () => {
    const off = { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' };
    expect(buildContainerSpec({ ...input, networkName: 'agent-sandbox-public' }).HostConfig?.Sysctls).toEqual(
      off,
    );
    expect(buildContainerSpec({ ...input, networkName: 'none' }).HostConfig?.Sysctls).toEqual(off);
    expect(spec.HostConfig?.Sysctls).toBeUndefined();
  });
  it('a loop-disk workspace is mounted nosuid,nodev', () => {
    const s = buildContainerSpec({ ...input, workspaceDisk: true, volumeDevice: '/data/disks/v.dev' });
    const mount = s.HostConfig?.Mounts?.[0] as { VolumeOptions?: { DriverConfig?: { Options?: object } } };
    expect(mount.VolumeOptions?.DriverConfig?.Options).toEqual({
      type: 'ext4',
      device: '/data/disks/v.dev',
      o: 'nosuid,nodev',
    });
  });
  it('a registry image: the kit mounted read-only, its entrypoint/user/healthcheck replaced, its env blanked and handed on for the agent only', () => {
    const s = buildContainerSpec({
      ...input,
      env: { SIDECAR_AUTH_TOKEN: 't', SIDECAR_PORT: '8080' },
      mountedSidecar: {
        kitVolume: 'agent-sandbox-kit-x',
        imageEnv: [
          'LD_PRELOAD=/evil.so',
          'PATH=/opt/x/bin:/usr/bin',
          'SIDECAR_AUTH_TOKEN=mine',
          'AGENT_SUBPROCESS_UID=0',
          'EMPTY=',
        ],
      },
    });
    expect(s.Entrypoint).toEqual(['/.agent-sandbox/kit/bin/tini', '--']);
    expect(s.Cmd?.[0]).toBe('/.agent-sandbox/kit/lib/ld-linux-x86-64.so.2');
    expect(s.User).toBe('0:0');
    expect(s.Healthcheck).toEqual({ Test: ['NONE'] });
    const env = Object.fromEntries(
      (s.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({ LD_PRELOAD: '', SIDECAR_AUTH_TOKEN: 't', AGENT_SUBPROCESS_UID: '' });
    expect(JSON.parse(env.SIDECAR_IMAGE_ENV!)).toEqual({
      LD_PRELOAD: '/evil.so',
      PATH: '/opt/x/bin:/usr/bin',
    });
    const mounts = s.HostConfig?.Mounts as unknown as Array<{
      Target: string;
      ReadOnly?: boolean;
      VolumeOptions?: { NoCopy?: boolean };
    }>;
    expect(mounts[0]?.VolumeOptions?.NoCopy).toBe(true);
    expect(mounts.find((m) => m.Target === '/.agent-sandbox')).toMatchObject({ ReadOnly: true });
    expect(s.HostConfig?.ReadonlyRootfs).toBe(true);
  });
});
