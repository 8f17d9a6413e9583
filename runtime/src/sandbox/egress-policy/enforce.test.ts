// Per-sandbox network policies on real parts: the real engine, the real nftables, the operator's
// dnsmasq per sandbox, and test hosts of this file's own in a network namespace it creates
// (routed from the host as public addresses would be), with a real upstream DNS server there
// (another dnsmasq, its names in a hosts file this test rewrites). Attacked from inside the
// sandbox: a disallowed name fails at DNS and by its IP, IP literals fail under strict, asking
// the upstream resolver directly is redirected to the policy's resolver, a name that re-resolves
// to a private or metadata address is refused, the host is unreachable; and the policy holds across
// stop/resume and an operator restart, and leaves nothing after delete. On the code before
// egress-policy/, every create here was refused with NETWORK_POLICY_UNAVAILABLE.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { isRuntimeError } from '../../errors.ts';
import type { SandboxRecord } from '../record.ts';
import { currentSuiteRuntime, makeRig, sidecarExec, type TestRig } from '../testing/rig.ts';
import { deleteOperatorTable, sandboxMac, setElements, setName, tableName } from './rules.ts';

vi.setConfig({ testTimeout: 240_000 });

const image = inject('sandboxImage');
const tag = randomBytes(3).toString('hex');
const ns = `asbx-knet-${tag}`;
const [hostIf, peerIf] = [`akn${tag}0`, `akn${tag}1`];
// Transit (CGNAT, so also a private address a rebinding answer may point at) and the test hosts,
// in 192.88.99.0/24 (the retired 6to4 relay block: public to every rule here, routed by nobody).
const x = randomInt(0, 63) * 4;
const transitHost = `100.127.${randomInt(1, 254)}.${x + 1}`;
const transitNs = transitHost.replace(/\.\d+$/, `.${x + 2}`);
const b = randomInt(1, 60) * 4;
const HOST = { a: `192.88.99.${b}`, b: `192.88.99.${b + 1}`, c: `192.88.99.${b + 2}` };
const dir = mkdtempSync(join(tmpdir(), 'asbx-knet-'));
// The upstream dnsmasq runs as nobody and re-reads the hosts file on SIGHUP.
chmodSync(dir, 0o755);
const hostsFile = join(dir, 'hosts');
let upstream: ChildProcess | undefined;
let servers: ChildProcess | undefined;
let rig: TestRig;
let call = 0;

const ip = (...a: string[]) => execFileSync('ip', a, { stdio: ['ignore', 'pipe', 'ignore'] });
const inNs = (...a: string[]) => ip('netns', 'exec', ns, 'ip', ...a);

function writeHosts(rebindTo: string[]): void {
  const lines = [
    `${HOST.a} allowed.example`,
    `${HOST.b} denied.example`,
    `${HOST.b} implicit.example`,
    ...rebindTo.map((a) => `${a} rebind.example`),
  ];
  writeFileSync(hostsFile, `${lines.join('\n')}\n`, { mode: 0o644 });
}

async function startNamespace(): Promise<void> {
  ip('netns', 'add', ns);
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', peerIf);
  ip('link', 'set', peerIf, 'netns', ns);
  ip('addr', 'add', `${transitHost}/30`, 'dev', hostIf);
  ip('link', 'set', hostIf, 'up');
  inNs('addr', 'add', `${transitNs}/30`, 'dev', peerIf);
  for (const a of Object.values(HOST)) inNs('addr', 'add', `${a}/32`, 'dev', peerIf);
  inNs('link', 'set', peerIf, 'up');
  inNs('link', 'set', 'lo', 'up');
  inNs('route', 'add', 'default', 'via', transitHost);
  for (const a of Object.values(HOST)) ip('route', 'add', `${a}/32`, 'via', transitNs);
  // A web server on each test host (and on the transit address), answering with its name.
  const targets = { [HOST.a]: 'host-a', [HOST.b]: 'host-b', [HOST.c]: 'host-c', [transitNs]: 'private' };
  const js = `const n=require('net');const t=${JSON.stringify(targets)};let k=0;for(const [h,w] of Object.entries(t))n.createServer(s=>{s.on('error',()=>{});s.end(w+'\\n')}).listen(80,h,()=>{if(++k===4)console.log('listening')})`;
  servers = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(servers.stdout!, 'data')) as [Buffer];
  expect(line.toString()).toBe('listening\n');
  // The "internet's" DNS: a dnsmasq in the namespace serving the hosts file (SIGHUP re-reads it).
  writeHosts([HOST.c]);
  upstream = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns,
      'dnsmasq',
      '--keep-in-foreground',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${hostsFile}`,
      `--listen-address=${transitNs}`,
      '--bind-interfaces',
      '--cache-size=0',
      '--log-facility=-',
      `--pid-file=${join(dir, 'upstream.pid')}`,
    ],
    { stdio: 'ignore' },
  );
  await until(() => resolveOnHost('allowed.example').join(',') === HOST.a, 'the upstream DNS server answers');
}

function stopNamespace(): void {
  servers?.kill('SIGKILL');
  upstream?.kill('SIGKILL');
  for (const a of Object.values(HOST)) {
    try {
      ip('route', 'del', `${a}/32`);
    } catch {}
  }
  for (const a of [
    ['link', 'del', hostIf],
    ['netns', 'del', ns],
  ]) {
    try {
      ip(...a);
    } catch {}
  }
}

/** Runs node code in the sandbox; its one line of output. */
async function inSandbox(rec: SandboxRecord, js: string): Promise<string> {
  const r = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), `node -e "${js}"`);
  return r.stdout.trim();
}

/** A name's IPv4 addresses as the sandbox resolves it (getaddrinfo), or the error code. */
const lookup = (rec: SandboxRecord, name: string) =>
  inSandbox(
    rec,
    `require('dns').lookup('${name}',{family:4,all:true},(e,a)=>console.log(e?e.code:a.map(x=>x.address).join(',')))`,
  );

/** A lookup sent straight to `server` (not the sandbox's configured resolver). */
const lookupVia = (rec: SandboxRecord, server: string, name: string) =>
  inSandbox(
    rec,
    `const r=new (require('dns').Resolver)({timeout:3000,tries:1});r.setServers(['${server}']);r.resolve4('${name}',(e,a)=>console.log(e?e.code:a.join(',')))`,
  );

/** Connects to host:80 from the sandbox: what the server says, or the error code. */
const fetchFrom = (rec: SandboxRecord, host: string) =>
  inSandbox(
    rec,
    `const s=require('net').connect({host:'${host}',port:80,family:4});s.setTimeout(8000);s.on('data',d=>{console.log(String(d).trim());process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(0)})`,
  );

const strictPolicy = { mode: 'strict' as const, allowDomains: ['allowed.example', 'rebind.example'] };

async function expectStrictHolds(rec: SandboxRecord): Promise<void> {
  expect(await lookup(rec, 'allowed.example')).toBe(HOST.a);
  expect(await fetchFrom(rec, 'allowed.example')).toBe('host-a');
  expect(await lookup(rec, 'denied.example')).toBe('ENOTFOUND');
  expect(await fetchFrom(rec, HOST.b)).toBe('EHOSTUNREACH');
}

beforeAll(async () => {
  stopNamespace();
  await startNamespace();
  rig = await makeRig(image, {
    egress: 'open',
    dnsUpstream: [transitNs],
    implicitDomains: ['implicit.example'],
  });
});

afterAll(async () => {
  await rig?.cleanup();
  if (rig) await deleteOperatorTable(rig.operatorId);
  stopNamespace();
  rmSync(dir, { recursive: true, force: true });
});

describe('per-sandbox network policy, enforced outside the container', () => {
  let strict: SandboxRecord;

  it('strict: an allowed name is reachable; a disallowed name fails at DNS and by its IP; IP literals and direct upstream queries fail', async () => {
    strict = await rig.manager.create({
      owner: '0xabc0000000000000000000000000000000000001',
      serviceId: 1,
      callId: `knet-${++call}`,
      network: strictPolicy,
    });
    expect(strict.network).toEqual({ ...strictPolicy, includeImplicitDomains: false });
    // Under the suite's runtime (the runsc twin: gVisor's Sentry makes the sandbox's sockets).
    const info = await rig.manager.driver.docker.getContainer(strict.containerId!).inspect();
    expect(info.HostConfig.Runtime).toBe(currentSuiteRuntime());
    await expectStrictHolds(strict);
    // strict without includeImplicitDomains: the operator's implicit list is not reachable.
    expect(await lookup(strict, 'implicit.example')).toBe('ENOTFOUND');
    // An IP literal never resolved through the policy: refused by the firewall.
    expect(await fetchFrom(strict, HOST.c)).toBe('EHOSTUNREACH');
    // Asking the upstream resolver directly: redirected to the policy's resolver, which refuses.
    expect(await lookupVia(strict, transitNs, 'denied.example')).toBe('ENOTFOUND');
    expect(await lookupVia(strict, '8.8.8.8', 'allowed.example')).toBe(HOST.a);
    // Nothing on the host: the policy network's gateway answers DNS only.
    const gw = rig.manager.networkPolicies!.resolverOf(strict.id)!.host;
    expect(await fetchFrom(strict, gw)).toBe('EHOSTUNREACH');
    expect(await setElements(rig.operatorId, strict.id)).toEqual([HOST.a]);
  });

  it('a name that re-resolves to a private or metadata address is refused at DNS and by the firewall', async () => {
    expect(await lookup(strict, 'rebind.example')).toBe(HOST.c);
    expect(await fetchFrom(strict, 'rebind.example')).toBe('host-c');
    for (const to of [[transitNs], ['169.254.169.254'], [HOST.c, '10.1.2.3']]) {
      writeHosts(to);
      process.kill(upstream!.pid!, 'SIGHUP');
      // The upstream answers the new address (read straight from it, from the host)...
      const want = [...to].sort().join(',');
      await until(() => resolveOnHost('rebind.example').join(',') === want, `the upstream answers ${want}`);
      // ...and the sandbox's resolver refuses the name.
      expect(await lookup(strict, 'rebind.example'), to.join(',')).toBe('ENOTFOUND');
    }
    // The private address the name pointed at was never opened: it has a server, unreached.
    expect(await fetchFrom(strict, transitNs)).toBe('EHOSTUNREACH');
    const opened = await setElements(rig.operatorId, strict.id);
    expect(opened).not.toContain(transitNs);
    expect(opened).not.toContain('169.254.169.254');
  });

  it('default: the operator implicit domains only', async () => {
    const def = await rig.manager.create({
      owner: '0xabc0000000000000000000000000000000000001',
      serviceId: 1,
      callId: `knet-${++call}`,
      network: { mode: 'default' },
    });
    expect(await fetchFrom(def, 'implicit.example')).toBe('host-b');
    expect(await lookup(def, 'allowed.example')).toBe('ENOTFOUND');
    expect(await fetchFrom(def, HOST.a)).toBe('EHOSTUNREACH');
    await rig.manager.delete(def.id);
  });

  it('survives stop/resume (a new resolver, the same rules)', async () => {
    const before = rig.manager.networkPolicies!.resolverOf(strict.id)!;
    await rig.manager.stop(strict.id);
    expect(rig.manager.networkPolicies!.inForce).not.toContain(strict.id);
    expect(processAlive(before.pid!)).toBe(false);
    strict = await rig.manager.resume(strict.id);
    expect(rig.manager.networkPolicies!.resolverOf(strict.id)!.pid).not.toBe(before.pid);
    await expectStrictHolds(strict);
  });

  it('survives an operator restart; while the operator is down nothing new resolves', async () => {
    const before = rig.manager.networkPolicies!.resolverOf(strict.id)!;
    await rig.close();
    expect(processAlive(before.pid!)).toBe(false);
    // Down: the sandbox runs on; the rules hold (fail-closed), names resolve to nothing.
    expect(await lookup(strict, 'allowed.example')).not.toBe(HOST.a);
    expect(await fetchFrom(strict, HOST.b)).toBe('EHOSTUNREACH');
    await rig.reopen();
    strict = rig.manager.get(strict.id);
    expect(rig.manager.networkPolicies!.inForce).toEqual([strict.id]);
    await expectStrictHolds(strict);
  });

  it('delete leaves nothing: no set, rule, resolver or file', async () => {
    const r = rig.manager.networkPolicies!.resolverOf(strict.id)!;
    await rig.manager.delete(strict.id);
    expect(processAlive(r.pid!)).toBe(false);
    const table = execFileSync('nft', ['list', 'table', 'inet', tableName(rig.operatorId)]).toString();
    expect(table).not.toContain(setName(strict.id));
    expect(table).not.toContain(sandboxMac(strict.id));
    expect(existsSync(join(rig.dir, 'resolvers', `${strict.id}.conf`))).toBe(false);
  });

  it('fail-closed: a container on the policy bridge that no operator has rules for reaches nothing', async () => {
    // As a policed sandbox whose rules were never installed (or were removed): same bridge, a MAC
    // no table names.
    const docker = rig.manager.driver.docker;
    const js = `const s=require('net').connect({host:'${HOST.a}',port:80});s.setTimeout(8000);s.on('data',d=>{console.log(String(d).trim());process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(0)})`;
    const c = await docker.createContainer({
      Image: image,
      Entrypoint: [],
      Cmd: ['node', '-e', js],
      Labels: { 'agent-sandbox.operator': rig.operatorId, 'agent-sandbox.test': '1' },
      HostConfig: { NetworkMode: rig.manager.networkPolicies!.networkName, CapDrop: ['ALL'] },
    });
    try {
      await c.start();
      await c.wait();
      const logs = (await c.logs({ stdout: true, stderr: true })).toString();
      expect(logs).toContain('EHOSTUNREACH');
      expect(logs).not.toContain('host-a');
    } finally {
      await c.remove({ force: true });
    }
  });

  it('attack: an explicit policy under SANDBOX_EGRESS=none is refused as wider', async () => {
    const none = await makeRig(image, { egress: 'none' });
    try {
      const err = await none.manager
        .create({ owner: '0xabc', serviceId: 1, callId: 'knet-none', network: strictPolicy })
        .catch((e: unknown) => e);
      expect(isRuntimeError(err, 'VALIDATION')).toBe(true);
      expect((err as Error).message).toMatch(/SANDBOX_EGRESS=none/);
    } finally {
      await none.cleanup();
    }
  });
});

/** Waits for a condition the test cannot get an event for (another process re-reading a file). */
async function until(ok: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function resolveOnHost(name: string): string[] {
  const out = execFileSync('node', [
    '-e',
    `const r=new (require('dns').Resolver)();r.setServers(['${transitNs}']);r.resolve4('${name}',(e,a)=>console.log(e?'':a.sort().join(',')))`,
  ])
    .toString()
    .trim();
  return out ? out.split(',') : [];
}
