import { describe, expect, it } from 'vitest';
import { proxyMatcher, resolveClientIp } from './client-ip.ts';
import { classify } from './rate-limit.ts';

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
    ['GET', '/health', 'public'],
    ['GET', '/metrics', 'public'],
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
    ['GET', '/api/provisions/12', 'read'],
  ])('%s %s → %s', (m, p, cls) => {
    expect(classify(m, p)).toBe(cls);
  });
});
