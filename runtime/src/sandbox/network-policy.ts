// A sandbox's network policy, as the public model states it: with no policy ("default") a sandbox
// reaches the operator's implicit domains (package registries, git hosts, container registries,
// CDNs, Tangle's services) and nothing else; "strict" reaches only the domains listed, plus the
// implicit ones when includeImplicitDomains. This module is the model and the decisions a
// DNS-aware allow-list makes (does a name match, may its answer be used); egress-policy/ enforces
// it outside the container (a resolver per sandbox that answers only allowed names and fills the
// nftables set its firewall rules let through).
import { isIP } from 'node:net';
import { z } from 'zod';
import { NON_PUBLIC_V4 } from '../docker/egress-rules.ts';
import { RuntimeError } from '../errors.ts';

export const DomainSchema = z
  .string()
  .max(253)
  .transform((s) => s.trim().toLowerCase().replace(/\.$/, ''))
  .refine((s) => isIP(s) === 0 && /^(\*\.)?([a-z0-9-]+\.)+[a-z][a-z0-9-]*$/.test(s), {
    message: 'must be a domain name such as example.com or *.example.com (not an IP address)',
  });

export const NetworkPolicySchema = z
  .object({
    mode: z.enum(['default', 'strict']),
    allowDomains: z.array(DomainSchema).max(64).default([]),
    includeImplicitDomains: z.boolean().default(false),
  })
  .strict();
export type NetworkPolicy = z.infer<typeof NetworkPolicySchema>;
export type NetworkPolicyInput = z.input<typeof NetworkPolicySchema>;

/** The operator's implicit list when SANDBOX_IMPLICIT_DOMAINS is not set. */
export const DEFAULT_IMPLICIT_DOMAINS: readonly string[] = [
  // package registries
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  'pypi.org',
  'files.pythonhosted.org',
  'crates.io',
  'static.crates.io',
  'proxy.golang.org',
  'sum.golang.org',
  'rubygems.org',
  'repo.maven.apache.org',
  'deb.debian.org',
  'security.debian.org',
  // git hosts
  'github.com',
  'codeload.github.com',
  'objects.githubusercontent.com',
  'raw.githubusercontent.com',
  'gitlab.com',
  'bitbucket.org',
  // container registries
  'registry-1.docker.io',
  'auth.docker.io',
  'production.cloudflare.docker.com',
  'ghcr.io',
  'pkg-containers.githubusercontent.com',
  'quay.io',
  // CDNs
  'cdn.jsdelivr.net',
  'unpkg.com',
  'cdnjs.cloudflare.com',
  // Tangle's services
  'tangle.tools',
  '*.tangle.tools',
];

/** The domains a sandbox under `policy` may resolve (undefined policy = "default"). */
export function effectiveDomains(policy: NetworkPolicy | undefined, implicit: readonly string[]): string[] {
  const p = policy ?? { mode: 'default', allowDomains: [], includeImplicitDomains: false };
  const list =
    p.mode === 'default'
      ? [...implicit, ...p.allowDomains]
      : [...p.allowDomains, ...(p.includeImplicitDomains ? implicit : [])];
  return [...new Set(list)].sort();
}

/**
 * Whether `name` (as asked in a DNS query) is allowed by `domains`: `example.com` allows it and
 * its subdomains, `*.example.com` only its subdomains. IP literals never match.
 */
export function domainAllowed(name: string, domains: readonly string[]): boolean {
  const n = name.trim().toLowerCase().replace(/\.$/, '');
  if (n === '' || isIP(n) !== 0) return false;
  return domains.some((d) => {
    if (d.startsWith('*.')) return n.endsWith(d.slice(1));
    return n === d || n.endsWith(`.${d}`);
  });
}

const v4 = (ip: string) => ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
const NON_PUBLIC = NON_PUBLIC_V4.map((c) => {
  const [base, bits] = c.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(v4(base) / size) * size;
  return [start, start + size] as const;
});

/** An IPv4 address the `public` egress policy refuses (private, CGNAT, metadata, loopback, …). */
export function isNonPublicV4(ip: string): boolean {
  if (isIP(ip) !== 4) return true;
  const n = v4(ip);
  return NON_PUBLIC.some(([a, b]) => n >= a && n < b);
}

/**
 * What an allow-list resolver does with an upstream answer for an allowed name: the addresses
 * the firewall may open, or a refusal when any is not public (a name that re-resolves to a private
 * or metadata address, DNS rebinding, is refused whole) or none is IPv4.
 */
export function usableAnswer(
  addresses: readonly string[],
): { ok: true; open: string[] } | { ok: false; why: string } {
  const bad = addresses.find((a) => isNonPublicV4(a));
  if (bad !== undefined) return { ok: false, why: `resolves to a non-public address (${bad})` };
  if (addresses.length === 0) return { ok: false, why: 'has no IPv4 address' };
  return { ok: true, open: [...new Set(addresses)] };
}

/**
 * Validates a create's policy (undefined: none). Never wider than the operator's SANDBOX_EGRESS:
 * a policy only narrows what a sandbox reaches, and under `none` there is nothing to narrow.
 */
export function resolveNetworkPolicy(
  input: unknown,
  egress: 'public' | 'none' | 'open',
): NetworkPolicy | undefined {
  if (input === undefined) return undefined;
  const r = NetworkPolicySchema.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new RuntimeError('VALIDATION', `network.${i?.path.join('.') || '(root)'}: ${i?.message}`);
  }
  if (egress === 'none') {
    throw new RuntimeError(
      'VALIDATION',
      'this operator gives sandboxes no network (SANDBOX_EGRESS=none), so a network policy cannot be wider; create without one',
    );
  }
  return r.data;
}
