// Where snapshot objects may be sent. The endpoint is the operator's own setting, but a wrong one
// (a typo, a copied example, a DNS name that points inside) would hand the sandboxes' data to
// whatever answers there, or let the operator's credentials reach a cloud's metadata service. So:
// https only (plain http only with SNAPSHOT_S3_ALLOW_HTTP); no private, loopback or CGNAT address
// unless its host is listed in SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS; link-local and the clouds'
// metadata/platform addresses never. Checked at start-up (the name resolved) and again on every
// connection (the agents' lookup), so a name that later resolves inside is refused too.
import {
  lookup as dnsLookup,
  type LookupAddress,
  type LookupAllOptions,
  type LookupOneOptions,
} from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { NON_PUBLIC_V4 } from '../docker/egress-rules.ts';
import { RuntimeError } from '../errors.ts';

export interface DestinationPolicy {
  allowHttp: boolean;
  /** Hosts (names or literal addresses, lower case) that may be private, loopback or CGNAT. */
  allowPrivateHosts: readonly string[];
}

const NEVER = new BlockList();
for (const c of [
  '169.254.0.0/16',
  '168.63.129.16/32',
  '100.100.100.200/32',
  '0.0.0.0/8',
  '224.0.0.0/4',
  '240.0.0.0/4',
]) {
  const [a, p] = c.split('/') as [string, string];
  NEVER.addSubnet(a, Number(p), 'ipv4');
}
for (const [a, p] of [
  ['fe80::', 10],
  ['fd00:ec2::', 64],
  ['fd20:ce::', 64],
  ['ff00::', 8],
  ['::', 128],
] as const)
  NEVER.addSubnet(a, p, 'ipv6');

const PRIVATE = new BlockList();
for (const c of NON_PUBLIC_V4) {
  const [a, p] = c.split('/') as [string, string];
  PRIVATE.addSubnet(a, Number(p), 'ipv4');
}
PRIVATE.addAddress('::1', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');
PRIVATE.addSubnet('64:ff9b::', 96, 'ipv6');

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as the IPv4 address it carries. */
function normal(ip: string): { ip: string; family: 'ipv4' | 'ipv6' } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return { ip: m[1]!, family: 'ipv4' };
  return { ip, family: isIP(ip) === 6 ? 'ipv6' : 'ipv4' };
}

/** Why `ip` (reached as `host`) may not receive snapshot objects, or undefined when it may. */
export function refusedAddress(host: string, ip: string, policy: DestinationPolicy): string | undefined {
  const a = normal(ip);
  if (NEVER.check(a.ip, a.family)) {
    return `${host} is ${ip}, a link-local, metadata, multicast or unspecified address, which never receives snapshots`;
  }
  if (PRIVATE.check(a.ip, a.family) && !policy.allowPrivateHosts.includes(host.toLowerCase())) {
    return `${host} is ${ip}, a private, loopback or CGNAT address; list the host in SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS if this store is yours`;
  }
  return undefined;
}

function refuse(endpoint: string, why: string): RuntimeError {
  return new RuntimeError(
    'CONFIG_INVALID',
    `SNAPSHOT_S3_ENDPOINT ${endpoint} is refused: ${why}. Snapshots go only to the object store you name; fix SNAPSHOT_S3_ENDPOINT or unset SNAPSHOT_S3_BUCKET to keep snapshots on local disk.`,
  );
}

/** The endpoint's URL, checked for scheme and form (no DNS); throws CONFIG_INVALID. */
export function parseEndpoint(endpoint: string, policy: DestinationPolicy): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw refuse(endpoint, 'it is not a URL (expected https://host[:port])');
  }
  if (url.username || url.password)
    throw refuse(endpoint, 'credentials go in SNAPSHOT_S3_ACCESS_KEY_ID/SECRET, not in the URL');
  if (url.protocol === 'http:' && !policy.allowHttp) {
    throw refuse(
      endpoint,
      'plain http sends the signed requests in the clear; use https, or set SNAPSHOT_S3_ALLOW_HTTP=true for a store on a network you trust',
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw refuse(endpoint, `scheme ${url.protocol} is not http(s)`);
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/** Checks the endpoint at start-up: its scheme, and every address its host resolves to. */
export async function checkDestination(endpoint: string, policy: DestinationPolicy): Promise<URL> {
  const url = parseEndpoint(endpoint, policy);
  const host = hostOf(url);
  const addrs: LookupAddress[] = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await new Promise<LookupAddress[]>((resolve, reject) =>
        dnsLookup(host, { all: true }, (err, out) => (err ? reject(err) : resolve(out))),
      ).catch((e: Error) => {
        throw refuse(
          endpoint,
          `its host does not resolve (${(e as NodeJS.ErrnoException).code ?? e.message})`,
        );
      });
  for (const a of addrs) {
    const why = refusedAddress(host, a.address, policy);
    if (why) throw refuse(endpoint, why);
  }
  return url;
}

type LookupCb = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for the HTTP agents: resolves as usual, then refuses a refused address. */
export function guardedLookup(policy: DestinationPolicy) {
  return (host: string, opts: LookupOneOptions | LookupAllOptions, cb: LookupCb): void => {
    dnsLookup(host, { ...opts, all: true }, (err, addrs) => {
      if (err) return cb(err, '', 0);
      for (const a of addrs) {
        const why = refusedAddress(host, a.address, policy);
        if (why) {
          const e: NodeJS.ErrnoException = new Error(`snapshot store connection refused: ${why}`);
          e.code = 'EACCES';
          return cb(e, '', 0);
        }
      }
      if ((opts as LookupAllOptions).all) return cb(null, addrs);
      const first = addrs[0]!;
      cb(null, first.address, first.family);
    });
  };
}
