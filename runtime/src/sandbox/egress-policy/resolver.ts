// One policed sandbox's resolver: a dnsmasq (Debian's dnsmasq-base) on the host, listening on the
// policy bridge's gateway at a port of its own, to which the operator's rules redirect every DNS
// packet the sandbox sends (rules.ts). It answers only the sandbox's allowed names (forwarded to
// the operator's upstream resolvers), everything else NXDOMAIN; every IPv4 address it answers for
// an allowed name goes into the sandbox's nftables set (--nftset), which is what the firewall
// lets the sandbox reach. An answer that holds a private, CGNAT, link-local, loopback or metadata
// address (DNS rebinding) is turned into NXDOMAIN (--bogus-nxdomain per NON_PUBLIC_V4 range, plus
// dnsmasq's own --stop-dns-rebind), and nothing is cached, so every re-resolution is checked again.
// One process per sandbox because dnsmasq fills sets by domain, not by client.
import { type ChildProcess, spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NON_PUBLIC_V4 } from '../../docker/egress-rules.ts';
import { RuntimeError } from '../../errors.ts';
import { setName, tableName } from './rules.ts';

export interface ResolverSpec {
  sandboxId: string;
  operatorId: string;
  /** Where it listens (the policy bridge's gateway) and on which port. */
  host: string;
  port: number;
  /** The domains it answers (effectiveDomains): `example.com` with subdomains, `*.example.com` only them. */
  domains: readonly string[];
  /** Upstream resolvers, `ip` or `ip#port`. */
  upstream: readonly string[];
  pidFile: string;
}

/** dnsmasq's configuration for one sandbox (one option a line, as in a conf-file). */
export function resolverConfig(s: ResolverSpec): string {
  const set = `4#inet#${tableName(s.operatorId)}#${setName(s.sandboxId)}`;
  const lines = [
    'no-resolv',
    'no-hosts',
    'no-poll',
    'bind-interfaces',
    `listen-address=${s.host}`,
    `port=${s.port}`,
    `pid-file=${s.pidFile}`,
    // Every answer is checked when it is given: nothing is served from a cache.
    'cache-size=0',
    'no-negcache',
    'stop-dns-rebind',
    ...NON_PUBLIC_V4.map((net) => `bogus-nxdomain=${net}`),
    // The sandboxes have no IPv6: AAAA answers would open nothing and only confuse clients.
    'filter-AAAA',
    // Anything not matched by a more specific server= line below is NXDOMAIN.
    'address=/#/',
  ];
  for (const d of s.domains) {
    // dnsmasq's /example.com/ is the name and its subdomains, /*.example.com/ only subdomains:
    // the same as domainAllowed.
    for (const up of s.upstream) lines.push(`server=/${d}/${up}`);
    lines.push(`nftset=/${d}/${set}`);
  }
  lines.push('');
  return lines.join('\n');
}

/** The upstream resolvers of a resolv.conf (dnsmasq runs on the host: loopback ones work too). */
export function resolvConfServers(text: string): string[] {
  return [...text.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)].map((m) => m[1] as string);
}

export interface RunningResolver {
  spec: ResolverSpec;
  child: ChildProcess;
  /** Stops it (SIGTERM, then waits for the exit). */
  stop(): Promise<void>;
}

/** Starts a resolver and waits until it answers a query; throws saying why when it cannot. */
export async function startResolver(
  dir: string,
  spec: Omit<ResolverSpec, 'pidFile'>,
  dnsmasq = 'dnsmasq',
): Promise<RunningResolver> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const full: ResolverSpec = { ...spec, pidFile: join(dir, `${spec.sandboxId}.pid`) };
  const conf = join(dir, `${spec.sandboxId}.conf`);
  await writeFile(conf, resolverConfig(full), { mode: 0o600 });
  const child = spawn(dnsmasq, ['--keep-in-foreground', `--conf-file=${conf}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-2000);
  });
  const exited = once(child, 'exit').then(() => undefined);
  const spawned = await Promise.race([
    once(child, 'spawn').then(() => true),
    once(child, 'error').then(([e]) => {
      throw new RuntimeError(
        'EGRESS_RULES',
        `cannot start the sandbox's resolver (${(e as Error).message}); install dnsmasq (apt-get install dnsmasq-base) or create sandboxes without a network policy`,
        { cause: e },
      );
    }),
  ]);
  if (!spawned) throw new RuntimeError('EGRESS_RULES', 'the resolver did not start');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  // Ready = it answers (NXDOMAIN for a name no policy allows); a refused query means not yet.
  const probe = new Resolver({ timeout: 1000, tries: 1 });
  probe.setServers([`${spec.host}:${spec.port}`]);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new RuntimeError(
        'EGRESS_RULES',
        `the sandbox's resolver exited at start: ${stderr.trim() || `code ${child.exitCode}`}`,
      );
    }
    const answered = await probe.resolve4('asbx-resolver-ready.invalid').then(
      () => true,
      (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND' || e.code === 'ENODATA',
    );
    if (answered) break;
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20))]);
  }
  return { spec: full, child, stop };
}

/**
 * Ends resolvers a previous run of this operator left (it was killed; its dnsmasq children kept
 * running): each pid file in `dir` whose process is a dnsmasq of that file's conf is signalled.
 * The files go too.
 */
export async function sweepResolvers(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const f of names.filter((n) => n.endsWith('.pid'))) {
    const pid = Number((await readFile(join(dir, f), 'utf8').catch(() => '')).trim());
    const conf = join(dir, f.replace(/\.pid$/, '.conf'));
    if (Number.isInteger(pid) && pid > 1) {
      const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmd.includes('dnsmasq') && cmd.includes(conf)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
  }
  for (const f of names) await rm(join(dir, f), { force: true });
}

/** Removes a sandbox's resolver files. */
export async function removeResolverFiles(dir: string, sandboxId: string): Promise<void> {
  for (const ext of ['pid', 'conf']) await rm(join(dir, `${sandboxId}.${ext}`), { force: true });
}
