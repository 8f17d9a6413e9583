// Security (hostile neighbour) on the real engine: code in sandbox B tries to reach sandbox A's
// server on its bridge address, services on the host (on its bridge gateway: the operator API and
// an anvil node listening on all interfaces), the cloud metadata address, and Azure's platform
// address (168.63.129.16, off the host in a routed namespace, so forwarded as on a VM). Under SANDBOX_EGRESS
// public each is refused by the operator's rules, DNS still resolves, and the sidecar's published
// port keeps working; under none the sandbox has no interface but loopback (no-network.test.ts
// covers the rest of none: the sidecar's socket, exec, runs, files); the same targets answer a sandbox on
// Docker's default bridge (egress open), proving the listeners were there to be refused.
// Serial (runs alone): every operator's rules see the shared asbx-public bridge, so a resolver
// exception one test's operator lists is rejected by another operator's chain running beside it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { anvilBinary, freePort, rpcChainId } from '@agent-sandbox/devnet';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createOperatorApi } from '../api/app.ts';
import { type OperatorApiServer, serveOperatorApi } from '../api/serve.ts';
import { SessionAuth } from '../auth/index.ts';
import { chainNames, EgressRules, hostNameservers, NON_PUBLIC_V4 } from '../docker/egress-rules.ts';
import type { SandboxRecord } from './record.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const METADATA = '169.254.169.254';
// Azure's platform address: WireServer on :80, the HostGAPlugin on :32526, DNS on :53.
const AZURE = '168.63.129.16';
let fabric: { stop(): void } | undefined;

/**
 * A cloud's platform network off the host, as on a real VM: a network namespace behind a veth
 * pair, routed from the host, holding the given addresses with listeners on the given ports. A
 * sandbox's traffic to it is forwarded (DOCKER-USER), not delivered to the host (INPUT).
 */
async function startFabric(targets: Record<string, number[]>): Promise<{ stop(): void }> {
  const tag = randomBytes(3).toString('hex');
  const ns = `asbx-fabric-${tag}`;
  const [host, peer] = [`asbxf${tag}0`, `asbxf${tag}1`];
  const ip = (...a: string[]) => execFileSync('ip', a);
  const inNs = (...a: string[]) => ip('netns', 'exec', ns, 'ip', ...a);
  const stop = () => {
    for (const addr of Object.keys(targets)) {
      try {
        ip('route', 'del', `${addr}/32`);
      } catch {}
    }
    for (const a of [
      ['link', 'del', host],
      ['netns', 'del', ns],
    ]) {
      try {
        ip(...a);
      } catch {}
    }
  };
  // A run killed before its clean-up leaves its fabric behind (same addresses, so our routes would
  // be ambiguous): remove every earlier fabric first. The names are this test's own.
  for (const old of execFileSync('ip', ['netns', 'list'])
    .toString()
    .matchAll(/^(asbx-fabric-[0-9a-f]+)/gm)) {
    try {
      ip('netns', 'del', old[1]!);
    } catch {}
  }
  for (const old of execFileSync('ip', ['-o', 'link', 'show'])
    .toString()
    .matchAll(/^\d+: (asbxf[0-9a-f]+0)[@:]/gm)) {
    try {
      ip('link', 'del', old[1]!);
    } catch {}
  }
  try {
    ip('netns', 'add', ns);
    ip('link', 'add', host, 'type', 'veth', 'peer', 'name', peer);
    ip('link', 'set', peer, 'netns', ns);
    ip('addr', 'add', '198.51.100.1/30', 'dev', host);
    ip('link', 'set', host, 'up');
    inNs('addr', 'add', '198.51.100.2/30', 'dev', peer);
    for (const addr of Object.keys(targets)) inNs('addr', 'add', `${addr}/32`, 'dev', peer);
    inNs('link', 'set', peer, 'up');
    inNs('link', 'set', 'lo', 'up');
    inNs('route', 'add', 'default', 'via', '198.51.100.1');
    for (const addr of Object.keys(targets)) ip('route', 'add', `${addr}/32`, 'via', '198.51.100.2');
    const js = `const n=require('net');let k=0;const t=${JSON.stringify(targets)};const all=Object.entries(t).flatMap(([h,ps])=>ps.map(p=>[h,p]));for(const [h,p] of all)n.createServer(s=>{s.on('error',()=>{});s.end('hello\\n')}).listen(p,h,()=>{if(++k===all.length)console.log('listening')})`;
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(child.stdout, 'data')) as [Buffer];
    expect(line.toString()).toBe('listening\n');
    return {
      stop() {
        child.kill('SIGKILL');
        stop();
      },
    };
  } catch (e) {
    stop();
    throw e;
  }
}
let pub: TestRig;
let none: TestRig;
let open: TestRig;
const servers: Server[] = [];
let apiPort = 0;
let chainPort = 0;
let api: OperatorApiServer | undefined;
let anvil: ChildProcess | undefined;
let call = 0;
const base = { owner: '0xAbC0000000000000000000000000000000000003', serviceId: 12 };

function listen(host: string, port = 0): Promise<number> {
  const s = createServer((sock) => {
    sock.on('error', () => {});
    sock.end('hello\n');
  });
  servers.push(s);
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, host, () => resolve((s.address() as { port: number }).port));
  });
}

/** From inside a sandbox: "open", or the connect error code (EHOSTUNREACH = refused by a rule). */
async function probe(rig: TestRig, rec: SandboxRecord, host: string, port: number): Promise<string> {
  const js = `const s=require('net').connect({host:'${host}',port:${port}});s.setTimeout(4000);s.on('connect',()=>{console.log('open');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(0)})`;
  const r = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), `node -e "${js}"`);
  return r.stdout.trim();
}

/** Starts a TCP server on port 7000 in the sandbox (detached from the exec), answering "from-a". */
async function startServerIn(rig: TestRig, rec: SandboxRecord): Promise<void> {
  const js = `require('net').createServer(s=>{s.on('error',()=>{});s.end('from-a\\n')}).listen(7000,()=>console.log('listening'))`;
  const r = await sidecarExec(
    rig.manager.sidecarEndpoint(rec.id),
    `setsid -f node -e "${js}" > /tmp/server.log 2>&1; until grep -q listening /tmp/server.log; do sleep 0.05; done`,
  );
  expect(r.exitCode).toBe(0);
}

async function bridgeAddress(rig: TestRig, rec: SandboxRecord): Promise<{ ip: string; gateway: string }> {
  const info = await rig.manager.driver.docker.getContainer(rec.containerId!).inspect();
  const net = Object.values(info.NetworkSettings.Networks)[0]!;
  return { ip: net.IPAddress, gateway: net.Gateway };
}

const create = (rig: TestRig, extra: { exposedPorts?: number[] } = {}) =>
  rig.manager.create({ ...base, callId: `net-${++call}`, ...extra });

let addedMetadataAddress = false;

/**
 * Every operator's chains on a bridge apply to every sandbox on it, so another operator's
 * chains left on the shared public bridge (a test of the parallel stage whose manager was never
 * closed, a run killed by SIGKILL) would refuse what this file's rules allow. This file runs
 * alone, so it clears them first.
 */
function sweepForeignChains(bridge: string): void {
  const ipt = (...a: string[]) => execFileSync('iptables', ['-w', '5', ...a]).toString();
  const chains = new Set<string>();
  for (const from of ['DOCKER-USER', 'INPUT']) {
    for (const line of ipt('-S', from).split('\n')) {
      const m = line.match(/^-A (\S+) -i (\S+) -j (ASBX-[0-9a-f]+-(?:FWD|IN))$/);
      if (!m || m[2] !== bridge) continue;
      ipt('-D', m[1]!, '-i', bridge, '-j', m[3]!);
      chains.add(m[3]!);
    }
  }
  for (const c of chains) {
    ipt('-F', c);
    ipt('-X', c);
  }
}

beforeAll(async () => {
  // The operator API and an anvil node, both bound to every interface (as a deployment might),
  // and a metadata service on the link-local address (added to the host's loopback for this
  // test, removed after).
  chainPort = await freePort();
  anvil = spawn(anvilBinary(), ['--host', '0.0.0.0', '--port', String(chainPort), '--silent'], {
    stdio: 'ignore',
  });
  while ((await rpcChainId(`http://127.0.0.1:${chainPort}`, 500)) === undefined) {
    if (anvil.exitCode !== null) throw new Error(`anvil exited with ${anvil.exitCode}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  sweepForeignChains('asbx-public');
  // The address may already be on the loopback (a machine that serves its own metadata there, or
  // a run killed before its clean-up): add it only when absent, and remove only what we added.
  const onLoopback = execFileSync('ip', ['-4', '-o', 'addr', 'show', 'dev', 'lo']).toString();
  if (!onLoopback.includes(` ${METADATA}/`)) {
    execFileSync('ip', ['addr', 'add', `${METADATA}/32`, 'dev', 'lo']);
    addedMetadataAddress = true;
  }
  // Something of the machine's own may already answer there; then it stands in for ours.
  await listen(METADATA, 80).catch((e: NodeJS.ErrnoException) => {
    if (addedMetadataAddress || e.code !== 'EADDRINUSE') throw e;
  });
  fabric = await startFabric({ [AZURE]: [80, 32526, 53] });
  [pub, none, open] = await Promise.all([
    makeRig(image, { egress: 'public' }),
    makeRig(image, { egress: 'none' }),
    makeRig(image, { egress: 'open' }),
  ]);
  const operatorApi = createOperatorApi({
    sessions: await SessionAuth.create({
      secret: pub.secret,
      store: pub.store,
      siwe: { publicUrl: 'http://127.0.0.1:9', chainId: 31337 },
    }),
    sandboxes: pub.manager,
    store: pub.store,
    metrics: new Registry(),
    logger: pino({ level: 'silent' }),
    mode: 'cloud',
    capabilities: {},
  });
  api = await serveOperatorApi(operatorApi, { host: '0.0.0.0', port: 0 });
  apiPort = api.port;
});
afterAll(async () => {
  await api?.close();
  anvil?.kill('SIGKILL');
  await Promise.all([pub?.cleanup(), none?.cleanup(), open?.cleanup()]);
  for (const s of servers) s.close();
  fabric?.stop();
  if (addedMetadataAddress) {
    try {
      execFileSync('ip', ['addr', 'del', `${METADATA}/32`, 'dev', 'lo']);
    } catch {}
  }
});

describe('hostile neighbour: network', () => {
  it("under public, B reaches neither A, nor the operator API or anvil on the host's gateway, nor the metadata address; DNS and the sidecar port work", async () => {
    const [a, b] = await Promise.all([create(pub, { exposedPorts: [7000] }), create(pub)]);
    await startServerIn(pub, a);
    const addrA = await bridgeAddress(pub, a);
    const addrB = await bridgeAddress(pub, b);
    expect(addrA.gateway).toBe(addrB.gateway);
    expect(pub.manager.network.name).toBe('agent-sandbox-public');

    // A's server is up: the host reaches it, and the operator's published port for it works.
    const viaHost = execFileSync('node', [
      '-e',
      `require('net').connect(${a.exposedHostPorts?.['7000']},'127.0.0.1').on('data',d=>{process.stdout.write(d);process.exit(0)})`,
    ]).toString();
    expect(viaHost).toBe('from-a\n');

    expect(await probe(pub, b, addrA.ip, 7000)).toBe('EHOSTUNREACH');
    expect(await probe(pub, b, addrB.gateway, apiPort)).toBe('EHOSTUNREACH');
    expect(await probe(pub, b, addrB.gateway, chainPort)).toBe('EHOSTUNREACH');
    expect(await probe(pub, b, METADATA, 80)).toBe('EHOSTUNREACH');
    const ns = hostNameservers()[0];
    if (ns) expect(await probe(pub, b, ns, 53)).toBe('open');
    // The sidecar itself still answers through its loopback port.
    expect((await sidecarExec(pub.manager.sidecarEndpoint(b.id), 'echo ok')).stdout).toBe('ok\n');
  });

  it("under public, Azure's platform address (WireServer :80, HostGAPlugin :32526) is refused, and its DNS only when it is a listed resolver", async () => {
    const b = await create(pub);
    for (const port of [80, 32526, 53]) expect(await probe(pub, b, AZURE, port)).toBe('EHOSTUNREACH');
    // On Azure it is the VM's resolver: listed, its port 53 passes and nothing else does.
    const azureHost = new EgressRules({
      policy: 'public',
      bridge: 'asbx-public',
      operatorId: pub.operatorId,
      nameservers: [...hostNameservers(), AZURE],
    });
    await azureHost.install();
    try {
      expect(await probe(pub, b, AZURE, 53)).toBe('open');
      expect(await probe(pub, b, AZURE, 80)).toBe('EHOSTUNREACH');
      expect(await probe(pub, b, AZURE, 32526)).toBe('EHOSTUNREACH');
    } finally {
      await pub.reopen();
    }
  });

  it("IPv6 is off in a sandbox on the isolated networks: the clouds' IPv6 metadata addresses (AWS fd00:ec2::254) have no route", async () => {
    const [b, n] = await Promise.all([create(pub), create(none)]);
    for (const [rig, rec] of [
      [pub, b],
      [none, n],
    ] as const) {
      const read =
        'cat /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/default/disable_ipv6; cat /proc/net/if_inet6';
      // gVisor shows no /proc/sys/net of its own: under runsc the sandbox's network namespace (the
      // one its --network=host stack uses) is read from the host, by the container's pid.
      const sysctl =
        rec.runtime === 'runsc'
          ? {
              stdout: execFileSync('nsenter', [
                '-t',
                String((await rig.manager.driver.docker.getContainer(rec.containerId!).inspect()).State.Pid),
                '-n',
                'sh',
                '-c',
                read,
              ]).toString(),
            }
          : await sidecarExec(rig.manager.sidecarEndpoint(rec.id), read);
      expect(sysctl.stdout).toBe('1\n1\n');
      expect(await probe(rig, rec, 'fd00:ec2::254', 80)).toMatch(
        /^(ENETUNREACH|EADDRNOTAVAIL|EAFNOSUPPORT)$/,
      );
    }
  });

  it('under none, the sandbox has no interface but loopback: nothing leaves it, not even DNS', async () => {
    const [b, p] = await Promise.all([create(none), create(pub)]);
    expect((await sidecarExec(none.manager.sidecarEndpoint(b.id), 'ls /sys/class/net')).stdout).toBe('lo\n');
    const gateway = (await bridgeAddress(pub, p)).gateway;
    expect(await probe(none, b, gateway, apiPort)).toBe('ENETUNREACH');
    expect(await probe(none, b, METADATA, 80)).toBe('ENETUNREACH');
    const ns = hostNameservers()[0];
    if (ns) expect(await probe(none, b, ns, 53)).toBe('ENETUNREACH');
  });

  it("the same targets answer a sandbox with egress open (Docker's default bridge, today's behaviour): the rules, not absent routes, refuse them", async () => {
    const [a, b] = await Promise.all([create(open), create(open)]);
    await startServerIn(open, a);
    const addr = await bridgeAddress(open, b);
    expect(open.manager.network.name).toBeUndefined();
    expect(await probe(open, b, (await bridgeAddress(open, a)).ip, 7000)).toBe('open');
    expect(await probe(open, b, addr.gateway, apiPort)).toBe('open');
    expect(await probe(open, b, addr.gateway, chainPort)).toBe('open');
    expect(await probe(open, b, METADATA, 80)).toBe('open');
    expect(await probe(open, b, AZURE, 80)).toBe('open');
    expect(await probe(open, b, AZURE, 32526)).toBe('open');
  });

  it('a sandbox stopped under open and resumed after a switch to public is recreated on the isolated network', async () => {
    const rec = await create(open);
    await open.manager.stop(rec.id);
    open.config.egress = 'public';
    try {
      await open.reopen();
      const back = await open.manager.resume(rec.id);
      expect(back.containerId).not.toBe(rec.containerId);
      const info = await open.manager.driver.docker.getContainer(back.containerId!).inspect();
      expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['agent-sandbox-public']);
      expect((await sidecarExec(open.manager.sidecarEndpoint(rec.id), 'echo ok')).stdout).toBe('ok\n');
    } finally {
      open.config.egress = 'open';
      await open.reopen();
    }
  });

  it('rules are per operator, replaced on a second install and gone after close', async () => {
    const { forward, input } = chainNames(pub.operatorId);
    // Only this operator's lines: other tests install and remove their own chains meanwhile.
    const rules = () =>
      execFileSync('iptables', ['-S'])
        .toString()
        .split('\n')
        .filter((l) => l.includes(forward) || l.includes(input))
        .join('\n');
    expect(rules()).toContain(`-A DOCKER-USER -i asbx-public -j ${forward}`);
    expect(rules()).toContain(`-A INPUT -i asbx-public -j ${input}`);
    const before = rules();
    await pub.reopen();
    expect(rules()).toBe(before);
    const forwardRules = 1 + 2 * hostNameservers().length + NON_PUBLIC_V4.length + 1;
    expect(before.split('\n').length).toBe(2 + 2 + forwardRules + 2);
    await pub.manager.close();
    expect(rules()).not.toContain(forward);
    expect(rules()).not.toContain(input);
    await pub.reopen();
  });
});
