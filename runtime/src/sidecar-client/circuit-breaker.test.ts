// Circuit breaker state machine, driven by an injected clock.
import { describe, expect, it } from 'vitest';
import { isRuntimeError, type RuntimeError } from '../errors.ts';
import { CircuitBreaker } from './circuit-breaker.ts';

function setup(opts: { failureThreshold?: number; cooldownMs?: number } = {}) {
  let now = 1_000_000;
  const breaker = new CircuitBreaker({ ...opts, clock: () => now });
  return { breaker, advance: (ms: number) => (now += ms) };
}

function openError(fn: () => unknown): RuntimeError {
  try {
    fn();
  } catch (e) {
    if (isRuntimeError(e, 'CIRCUIT_OPEN')) return e;
    throw e;
  }
  throw new Error('expected CIRCUIT_OPEN');
}

const fail = () => Promise.reject(new Error('sidecar down'));
const ok = () => Promise.resolve('ok');

describe('CircuitBreaker', () => {
  it('opens after N consecutive failures and refuses with retry_after_ms', async () => {
    const { breaker, advance } = setup();
    for (let i = 0; i < 4; i++) await expect(breaker.run('sb', fail)).rejects.toThrow('sidecar down');
    expect(breaker.state('sb')).toEqual({ state: 'closed', failures: 4 });
    await expect(breaker.run('sb', fail)).rejects.toThrow('sidecar down');
    expect(breaker.state('sb').state).toBe('open');
    advance(10_000);
    const err = openError(() => breaker.acquire('sb'));
    expect(err.status).toBe(503);
    expect(err.details).toMatchObject({ retry_after_ms: 20_000 });
    // Other sandboxes are unaffected: the breaker is per sandbox, not per endpoint.
    expect(await breaker.run('other', ok)).toBe('ok');
  });

  it('resets the count on a success while closed', async () => {
    const { breaker } = setup();
    for (let i = 0; i < 4; i++) await breaker.run('sb', fail).catch(() => {});
    await breaker.run('sb', ok);
    for (let i = 0; i < 4; i++) await breaker.run('sb', fail).catch(() => {});
    expect(breaker.state('sb').state).toBe('closed');
  });

  it('allows exactly one half-open probe after the cooldown; success closes', async () => {
    const { breaker, advance } = setup({ failureThreshold: 2, cooldownMs: 30_000 });
    for (let i = 0; i < 2; i++) await breaker.run('sb', fail).catch(() => {});
    advance(29_999);
    openError(() => breaker.acquire('sb'));
    advance(1);
    const probe = breaker.acquire('sb');
    expect(probe.probe).toBe(true);
    expect(breaker.state('sb').state).toBe('half_open');
    const concurrent = openError(() => breaker.acquire('sb'));
    expect(concurrent.details?.retry_after_ms).toBeGreaterThan(0);
    probe.success();
    probe.failure(); // settling twice is ignored
    expect(breaker.state('sb')).toEqual({ state: 'closed', failures: 0 });
    expect(breaker.acquire('sb').probe).toBe(false);
  });

  it('reopens for a full cooldown when the probe fails', async () => {
    const { breaker, advance } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    await breaker.run('sb', fail).catch(() => {});
    advance(1000);
    await expect(breaker.run('sb', fail)).rejects.toThrow('sidecar down');
    expect(breaker.state('sb')).toMatchObject({ state: 'open', retry_after_ms: 1000 });
    advance(999);
    openError(() => breaker.acquire('sb'));
    advance(1);
    expect(await breaker.run('sb', ok)).toBe('ok');
    expect(breaker.state('sb').state).toBe('closed');
  });

  it('replaces a probe that never settles after another cooldown', async () => {
    const { breaker, advance } = setup({ failureThreshold: 1, cooldownMs: 1000 });
    await breaker.run('sb', fail).catch(() => {});
    advance(1000);
    breaker.acquire('sb'); // lost: never settled
    advance(500);
    openError(() => breaker.acquire('sb'));
    advance(500);
    expect(breaker.acquire('sb').probe).toBe(true);
  });

  it('does not count errors the classifier calls healthy (e.g. a 4xx)', async () => {
    const { breaker } = setup({ failureThreshold: 2 });
    for (let i = 0; i < 5; i++) {
      await expect(
        breaker.run(
          'sb',
          () => Promise.reject(new Error('bad input')),
          () => false,
        ),
      ).rejects.toThrow();
    }
    expect(breaker.state('sb').state).toBe('closed');
  });

  it('prunes entries idle for more than twice the cooldown', async () => {
    const { breaker, advance } = setup({ cooldownMs: 1000 });
    await breaker.run('a', fail).catch(() => {});
    advance(1500);
    await breaker.run('b', fail).catch(() => {});
    await breaker.run('healthy', ok);
    expect(breaker.size).toBe(2); // a healthy closed circuit keeps no entry
    advance(600);
    expect(breaker.prune()).toBe(1);
    expect(breaker.state('a')).toEqual({ state: 'closed', failures: 0 });
    expect(breaker.state('b').failures).toBe(1);
  });

  it('validates its configuration', () => {
    expect(() => new CircuitBreaker({ failureThreshold: 0 })).toThrow(/failureThreshold/);
    expect(() => new CircuitBreaker({ cooldownMs: 0 })).toThrow(/cooldownMs/);
  });
});
