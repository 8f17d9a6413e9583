// The network model's decisions, attacked: look-alike names, IP literals, answers that point at
// private or metadata addresses (DNS rebinding), and what a create may ask for (never wider than
// SANDBOX_EGRESS). Enforcement on real parts: egress-policy/enforce.test.ts.
import { describe, expect, it } from 'vitest';
import { RuntimeError } from '../errors.ts';
import { parseSandboxRuntimeConfig } from './config.ts';
import {
  DEFAULT_IMPLICIT_DOMAINS,
  domainAllowed,
  effectiveDomains,
  isNonPublicV4,
  resolveNetworkPolicy,
  usableAnswer,
} from './network-policy.ts';
import { resolveCreate } from './request.ts';

const implicit = ['registry.npmjs.org', 'github.com', '*.tangle.tools'];

describe('domainAllowed', () => {
  it('allows a listed name and its subdomains; *.x only subdomains', () => {
    expect(domainAllowed('github.com', implicit)).toBe(true);
    expect(domainAllowed('codeload.github.com.', implicit)).toBe(true);
    expect(domainAllowed('GITHUB.COM', implicit)).toBe(true);
    expect(domainAllowed('rpc.tangle.tools', implicit)).toBe(true);
    expect(domainAllowed('tangle.tools', implicit)).toBe(false);
  });

  it('attack: look-alikes, suffix tricks and IP literals never match', () => {
    for (const name of [
      'evilgithub.com',
      'github.com.evil.net',
      'github.co',
      'xtangle.tools',
      '140.82.112.3',
      '169.254.169.254',
      '::1',
      '',
    ]) {
      expect(domainAllowed(name, implicit), name).toBe(false);
    }
  });
});

describe('effectiveDomains', () => {
  it('default = implicit (+ listed); strict = listed only unless includeImplicitDomains', () => {
    expect(effectiveDomains(undefined, implicit)).toEqual([...implicit].sort());
    const strict = { mode: 'strict' as const, allowDomains: ['example.com'], includeImplicitDomains: false };
    expect(effectiveDomains(strict, implicit)).toEqual(['example.com']);
    expect(effectiveDomains({ ...strict, includeImplicitDomains: true }, implicit)).toEqual(
      ['example.com', ...implicit].sort(),
    );
  });

  it('the shipped implicit list covers registries, git hosts, container registries, CDNs and Tangle', () => {
    for (const n of ['registry.npmjs.org', 'github.com', 'ghcr.io', 'cdn.jsdelivr.net', 'app.tangle.tools'])
      expect(domainAllowed(n, DEFAULT_IMPLICIT_DOMAINS), n).toBe(true);
    expect(domainAllowed('example.com', DEFAULT_IMPLICIT_DOMAINS)).toBe(false);
  });
});

describe('usableAnswer', () => {
  it('attack: an allowed name that resolves to a private or metadata address is refused whole', () => {
    expect(usableAnswer(['140.82.112.3'])).toEqual({ ok: true, open: ['140.82.112.3'] });
    for (const bad of ['169.254.169.254', '10.0.0.5', '127.0.0.1', '172.17.0.1', '100.64.1.1', '0.0.0.0']) {
      expect(isNonPublicV4(bad), bad).toBe(true);
      expect(usableAnswer(['140.82.112.3', bad])).toMatchObject({ ok: false });
    }
    expect(usableAnswer([])).toMatchObject({ ok: false });
  });
});

describe('resolveNetworkPolicy (at create)', () => {
  it('validates the policy, refusing IP literals and junk with VALIDATION', () => {
    for (const p of [
      { mode: 'strict', allowDomains: ['10.0.0.1'] },
      { mode: 'strict', allowDomains: ['not a domain'] },
      { mode: 'open' },
      { mode: 'strict', allow: ['x.com'] },
    ]) {
      expect(() => resolveNetworkPolicy(p, 'public'), JSON.stringify(p)).toThrow(
        expect.objectContaining({ code: 'VALIDATION' }),
      );
    }
  });

  it('accepts a valid policy (normalised, defaults filled in); refuses any policy under egress none', () => {
    const p = { mode: 'strict', allowDomains: ['Example.com.'] };
    expect(resolveNetworkPolicy(p, 'public')).toEqual({
      mode: 'strict',
      allowDomains: ['example.com'],
      includeImplicitDomains: false,
    });
    expect(resolveNetworkPolicy({ mode: 'default' }, 'open')).toMatchObject({ mode: 'default' });
    expect(() => resolveNetworkPolicy(p, 'none')).toThrow(/SANDBOX_EGRESS=none/);
    expect(resolveNetworkPolicy(undefined, 'public')).toBeUndefined();
    const cfg = parseSandboxRuntimeConfig({ image: 'x', snapshotDir: '/tmp/x' });
    expect(resolveCreate({ owner: 'o', serviceId: 1, callId: 1, network: p }, cfg).network).toEqual({
      mode: 'strict',
      allowDomains: ['example.com'],
      includeImplicitDomains: false,
    });
    expect(resolveCreate({ owner: 'o', serviceId: 1, callId: 1 }, cfg)).not.toHaveProperty('network');
    expect(() =>
      resolveCreate({ owner: 'o', serviceId: 1, callId: 1, network: p }, { ...cfg, egress: 'none' }),
    ).toThrow(RuntimeError);
  });
});
