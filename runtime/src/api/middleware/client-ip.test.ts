import { describe, expect, it } from 'vitest';
import { proxyMatcher, resolveClientIp } from './client-ip.ts';
import { classify, rateKey } from './rate-limit.ts';

describe('resolveClientIp', () => {
  const trusted = proxyMatcher(['10.0.0.0/8', '127.0.0.1', '::1']);

  it('ignores X-Forwarded-For from an untrusted peer', () => {
    expect(resolveClientIp('203.0.113.9', '1.2.3.4', trusted)).toBe('203.0.113.9');
  });

  it('takes the first untrusted hop from the right when the peer is a trusted proxy', () => {
    expect(resolveClientIp('::ffff:127.0.0.1', '6.6.6.6, 198.51.100.7, 10.1.2.3', trusted)).toBe(
      '198.51.100.7',
    );
  });

  it('a client cannot pick its bucket by prepending fake hops', () => {
    const a = resolveClientIp('10.0.0.5', 'forged-1, 198.51.100.7', trusted);
    const b = resolveClientIp('10.0.0.5', 'forged-2, 198.51.100.7', trusted);
    expect(a).toBe(b);
  });

  it('matches CIDRs and exact addresses only', () => {
    expect(trusted('10.255.0.1')).toBe(true);
    expect(trusted('11.0.0.1')).toBe(false);
    expect(trusted('::1')).toBe(true);
    expect(proxyMatcher([])('127.0.0.1')).toBe(false);
  });
});

describe('classify', () => {
  it.each([
    ['GET', '/health', 'probe'],
    ['GET', '/metrics', 'probe'],
    ['POST', '/api/auth/challenge', 'auth'],
    ['DELETE', '/api/auth/session', 'auth'],
    ['GET', '/api/sandboxes', 'read'],
    ['GET', '/api/sandboxes/sbx-1', 'read'],
    ['GET', '/api/sandboxes/sbx-1/runs/r/events', 'read'],
    ['POST', '/api/sandboxes/sbx-1/exec', 'write'],
    ['GET', '/api/sandboxes/sbx-1/secrets', 'write'],
    ['GET', '/api/sandbox/port/3000/x', 'write'],
    ['POST', '/api/sandboxes/sbx-1/terminals/t1/input', 'terminal'],
    ['GET', '/api/sandbox/terminals/t1/stream', 'terminal'],
    ['POST', '/api/sandbox/tee/channel', 'terminal'],
    ['GET', '/api/sandbox/tee/public-key', 'write'],
    ['GET', '/api/provisions/12', 'read'],
  ])('%s %s → %s', (m, p, cls) => {
    expect(classify(m, p)).toBe(cls);
  });
});

describe('rateKey', () => {
  it('keys IPv4 by address and IPv6 by its /64, whatever the spelling', () => {
    expect(rateKey('203.0.113.9')).toBe('203.0.113.9');
    const k = rateKey('2001:db8:1:2::1');
    expect(k).toBe('2001:db8:1:2::/64');
    for (const same of [
      '2001:0DB8:0001:0002:ffff:0:0:9',
      '2001:db8:1:2:a:b:c:d',
      '[2001:db8:1:2::5]',
      'fe80::1%eth0'.replace('fe80::1', '2001:db8:1:2::1'),
    ]) {
      expect(rateKey(same)).toBe(k);
    }
    expect(rateKey('2001:db8:1:3::1')).not.toBe(k);
    expect(rateKey('::1')).toBe('0:0:0:0::/64');
    expect(rateKey('::')).toBe('0:0:0:0::/64');
    expect(rateKey('2001:db8::1.2.3.4')).toBe('2001:db8:0:0::/64');
    expect(rateKey('unknown')).toBe('unknown');
    expect(rateKey('1:2:3:4:5:6:7:8:9')).toBe('1:2:3:4:5:6:7:8:9'); // not an address: kept whole
  });
});
