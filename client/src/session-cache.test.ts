// The on-disk session cache: private file modes, keyed by operator URL + address, expiry.
import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { configDir, SessionCache } from './session-cache.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'client-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const A = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const B = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';
const later = () => Math.floor(Date.now() / 1000) + 3600;

describe('SessionCache', () => {
  it('writes the sessions file 0600 in a 0700 directory', async () => {
    const cache = new SessionCache(join(dir, 'agent-sandbox'));
    await cache.put({ operator: 'http://127.0.0.1:9090/', address: A, token: 't1', expiresAt: later() });
    expect(statSync(cache.sessionsFile).mode & 0o777).toBe(0o600);
    expect(statSync(cache.dir).mode & 0o777).toBe(0o700);
  });

  it('keys sessions by operator URL and address (case- and slash-insensitive)', async () => {
    const cache = new SessionCache(dir);
    await cache.put({ operator: 'http://127.0.0.1:9090', address: A, token: 'ta', expiresAt: later() });
    await cache.put({ operator: 'http://127.0.0.1:9090', address: B, token: 'tb', expiresAt: later() });
    await cache.put({ operator: 'http://127.0.0.1:9091', address: A, token: 'tc', expiresAt: later() });
    expect((await cache.get('http://127.0.0.1:9090/', A.toUpperCase().replace('0X', '0x')))?.token).toBe(
      'ta',
    );
    expect((await cache.get('http://127.0.0.1:9090', B))?.token).toBe('tb');
    expect((await cache.get('http://127.0.0.1:9091', A))?.token).toBe('tc');
    // Without an address, only an unambiguous session is used.
    expect(await cache.get('http://127.0.0.1:9090')).toBeUndefined();
    expect((await cache.get('http://127.0.0.1:9091'))?.token).toBe('tc');
  });

  it('does not hand out expired sessions, and removes on logout', async () => {
    const cache = new SessionCache(dir);
    await cache.put({
      operator: 'http://o',
      address: A,
      token: 'old',
      expiresAt: Math.floor(Date.now() / 1000) - 1,
    });
    expect(await cache.get('http://o', A)).toBeUndefined();
    await cache.put({ operator: 'http://o', address: A, token: 'new', expiresAt: later() });
    expect(await cache.remove('http://o', A)).toBe(true);
    expect(await cache.get('http://o', A)).toBeUndefined();
    expect(await cache.remove('http://o', A)).toBe(false);
  });

  it('treats a corrupt cache as empty (a session is one sign-in away)', async () => {
    const cache = new SessionCache(dir);
    writeFileSync(cache.sessionsFile, '{not json');
    expect(await cache.get('http://o', A)).toBeUndefined();
    await cache.put({ operator: 'http://o', address: A, token: 't', expiresAt: later() });
    expect((await cache.get('http://o', A))?.token).toBe('t');
  });

  it('remembers which operator serves a sandbox', async () => {
    const cache = new SessionCache(dir);
    await cache.rememberSandbox('sb-1', 'http://127.0.0.1:9091/', 4n);
    expect(await cache.operatorFor('sb-1')).toBe('http://127.0.0.1:9091');
    await cache.forgetSandbox('sb-1');
    expect(await cache.operatorFor('sb-1')).toBeUndefined();
  });

  it('finds its directory from env', () => {
    expect(configDir({ AGENT_SANDBOX_CONFIG_DIR: '/x' })).toBe('/x');
    expect(configDir({ XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/agent-sandbox');
    expect(configDir({ HOME: '/home/u' })).toBe('/home/u/.config/agent-sandbox');
  });
});

describe('hostile local user: the session cache write', () => {
  it('a symlink planted at the temp name (pid and clock are guessable) receives no token', async () => {
    const cache = new SessionCache(join(dir, 'agent-sandbox'));
    await cache.put({ operator: 'http://127.0.0.1:9090/', address: A, token: 'first', expiresAt: later() });
    const loot = join(dir, 'loot');
    writeFileSync(loot, '', { mode: 0o666 });
    const now = 1_800_000_000_000;
    const spy = vi.spyOn(Date, 'now').mockReturnValue(now);
    try {
      // The old writer's name: `<file>.<pid>.<Date.now()>.tmp`.
      symlinkSync(loot, `${cache.sessionsFile}.${process.pid}.${now}.tmp`);
      await cache.put({
        operator: 'http://127.0.0.1:9090/',
        address: A,
        token: 'secret-token',
        expiresAt: later(),
      });
    } finally {
      spy.mockRestore();
    }
    expect(readFileSync(loot, 'utf8')).toBe('');
    const st = lstatSync(cache.sessionsFile);
    expect(st.isFile() && (st.mode & 0o777) === 0o600).toBe(true);
    expect(readFileSync(cache.sessionsFile, 'utf8')).toContain('secret-token');
  });
});
