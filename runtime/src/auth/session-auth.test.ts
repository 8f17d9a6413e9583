// Session auth with real secp256k1 signatures (viem local accounts) and a real on-disk store.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Hex, hexToBytes } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isRuntimeError, type RuntimeError } from '../errors.ts';
import { EncryptedStore } from '../store/index.ts';
import { assertSandboxAccess, sameAddress, scopeAllows } from './scope.ts';
import { SessionAuth, type SessionAuthLimits } from './session-auth.ts';

const SECRET = randomBytes(32).toString('hex');
let dir: string;
let store: EncryptedStore;
let now: number;
const clock = () => now;
let alice: PrivateKeyAccount;

async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<RuntimeError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (isRuntimeError(e)) return e;
    throw e;
  }
  throw new Error('expected a RuntimeError, got success');
}

function makeAuth(limits?: Partial<SessionAuthLimits>, secret = SECRET): Promise<SessionAuth> {
  return SessionAuth.create({ secret, store, clock, ...(limits ? { limits } : {}) });
}

async function signIn(auth: SessionAuth, account = alice, scope?: string) {
  const ch = auth.createChallenge();
  const signature = await account.signMessage({ message: ch.message });
  return auth.createSession({ nonce: ch.nonce, signature, ...(scope ? { scope } : {}) });
}

/** Rewrites a 27/28-style signature's v byte. */
function withV(sig: Hex, v: number): string {
  return `${sig.slice(0, 130)}${v.toString(16).padStart(2, '0')}`;
}

async function restart(limits?: Partial<SessionAuthLimits>): Promise<SessionAuth> {
  await store.close();
  store = await EncryptedStore.open({ dir, secret: SECRET });
  return makeAuth(limits);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'auth-test-'));
  store = await EncryptedStore.open({ dir, secret: SECRET });
  now = Date.parse('2026-03-01T12:00:00.250Z');
  alice = privateKeyToAccount(generatePrivateKey());
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SessionAuth', () => {
  it('signs in with a real EIP-191 signature and verifies the token', async () => {
    const auth = await makeAuth();
    const ch = auth.createChallenge();
    expect(ch.nonce).toMatch(/^[0-9a-f]{64}$/);
    const nowSec = Math.floor(now / 1000);
    expect(ch.expires_at).toBe(nowSec + 300);
    expect(ch.message).toBe(
      `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${ch.nonce}\nExpires: ${nowSec + 300}`,
    );
    const signature = await alice.signMessage({ message: ch.message });
    const session = await auth.createSession({ nonce: ch.nonce, signature });
    expect(session.address).toBe(alice.address.toLowerCase());
    expect(session.expires_at).toBe(nowSec + 3600);
    expect(session.token).toMatch(/^v4\.local\.[A-Za-z0-9_-]+$/);
    const claims = await auth.verify(session.token);
    expect(claims).toMatchObject({ address: alice.address.toLowerCase(), exp: nowSec + 3600, iat: nowSec });
    expect(claims.jti).toMatch(/^[0-9a-f]{32}$/);
    expect(claims.scope).toBeUndefined();
    expect(session.token).not.toContain(alice.address.slice(2).toLowerCase());
  });

  it('accepts v = 0/1 and signatures without 0x', async () => {
    const auth = await makeAuth();
    for (const form of ['v01', 'no0x', 'both'] as const) {
      const ch = auth.createChallenge();
      const sig = await alice.signMessage({ message: ch.message });
      const v = hexToBytes(sig)[64] as number;
      let s: string = form === 'no0x' ? sig : withV(sig, v - 27);
      if (form !== 'v01') s = s.slice(2);
      const session = await auth.createSession({ nonce: ch.nonce, signature: s });
      expect(session.address).toBe(alice.address.toLowerCase());
    }
  });

  it('refuses malformed signatures and v outside {0,1,27,28}', async () => {
    const auth = await makeAuth();
    for (const bad of [
      undefined,
      '0x1234',
      `0x${'zz'.repeat(65)}`,
      `0x${'11'.repeat(64)}02`,
      `0x${'11'.repeat(64)}1d`,
    ]) {
      const ch = auth.createChallenge();
      const err = await errorOf(auth.createSession({ nonce: ch.nonce, signature: bad }));
      expect(err.code).toBe('UNAUTHORIZED');
      expect(err.status).toBe(401);
    }
  });

  it('never signs in as the victim with a forged signature', async () => {
    const auth = await makeAuth();
    // r = 0 is not a curve point: recovery fails outright.
    let ch = auth.createChallenge();
    expect(
      (await errorOf(auth.createSession({ nonce: ch.nonce, signature: `0x${'00'.repeat(64)}1b` }))).code,
    ).toBe('UNAUTHORIZED');
    // Alice's real signature with s altered recovers some other key, never Alice.
    ch = auth.createChallenge();
    const real = await alice.signMessage({ message: ch.message });
    const forged = `${real.slice(0, 100)}${real[100] === 'a' ? 'b' : 'a'}${real.slice(101)}`;
    const res = await auth.createSession({ nonce: ch.nonce, signature: forged }).catch((e) => e);
    if (isRuntimeError(res)) expect(res.code).toBe('UNAUTHORIZED');
    else expect(res.address).not.toBe(alice.address.toLowerCase());
    // When the client names the address it expects, a mismatch is refused.
    ch = auth.createChallenge();
    const mallory = privateKeyToAccount(generatePrivateKey());
    const sig = await mallory.signMessage({ message: ch.message });
    const err = await errorOf(
      auth.createSession({ nonce: ch.nonce, signature: sig, address: alice.address }),
    );
    expect(err.code).toBe('UNAUTHORIZED');
  });

  it('does not accept a signature over another message', async () => {
    const auth = await makeAuth();
    const ch = auth.createChallenge();
    const other = auth.createChallenge();
    const sigOverOther = await alice.signMessage({ message: other.message });
    const res = await auth.createSession({ nonce: ch.nonce, signature: sigOverOther });
    expect(res.address).not.toBe(alice.address.toLowerCase());
    const ch2 = auth.createChallenge();
    const sigOverEdited = await alice.signMessage({ message: `${ch2.message} ` });
    expect(
      (
        await errorOf(
          auth.createSession({ nonce: ch2.nonce, signature: sigOverEdited, address: alice.address }),
        )
      ).code,
    ).toBe('UNAUTHORIZED');
  });

  it('uses a challenge once, even when the first attempt fails', async () => {
    const auth = await makeAuth();
    const ch = auth.createChallenge();
    const sig = await alice.signMessage({ message: ch.message });
    await auth.createSession({ nonce: ch.nonce, signature: sig });
    const replay = await errorOf(auth.createSession({ nonce: ch.nonce, signature: sig }));
    expect(replay.code).toBe('UNAUTHORIZED');
    expect(replay.message).toMatch(/already used/);

    const ch2 = auth.createChallenge();
    await errorOf(auth.createSession({ nonce: ch2.nonce, signature: '0x00' }));
    const good = await alice.signMessage({ message: ch2.message });
    expect((await errorOf(auth.createSession({ nonce: ch2.nonce, signature: good }))).code).toBe(
      'UNAUTHORIZED',
    );
    expect((await errorOf(auth.createSession({ nonce: 'not-hex', signature: good }))).code).toBe(
      'UNAUTHORIZED',
    );
  });

  it('refuses an expired challenge (valid through its expiry second)', async () => {
    const auth = await makeAuth();
    const a = auth.createChallenge();
    const b = auth.createChallenge();
    now += 300_000 - 250; // exactly the expiry second
    await auth.createSession({ nonce: a.nonce, signature: await alice.signMessage({ message: a.message }) });
    now += 1000;
    const err = await errorOf(
      auth.createSession({ nonce: b.nonce, signature: await alice.signMessage({ message: b.message }) }),
    );
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toMatch(/expired/);
  });

  it('refuses tampered, truncated, foreign and non-v4.local tokens', async () => {
    const auth = await makeAuth();
    const { token } = await signIn(auth);
    const body = token.slice('v4.local.'.length);
    const mid = Math.floor(body.length / 2);
    const tampered = `v4.local.${body.slice(0, mid)}${body[mid] === 'A' ? 'B' : 'A'}${body.slice(mid + 1)}`;
    for (const bad of [
      tampered,
      token.slice(0, -4),
      `v4.public.${body}`,
      `${token}.Zm9v`,
      '',
      'x'.repeat(5000),
      42,
    ]) {
      const err = await errorOf(auth.verify(bad));
      expect(err.code).toBe('UNAUTHORIZED');
      expect(err.message).not.toContain(body);
    }
    // Minted under another SESSION_AUTH_SECRET.
    const otherDir = await mkdtemp(join(tmpdir(), 'auth-test-other-'));
    const otherSecret = randomBytes(32).toString('hex');
    const otherStore = await EncryptedStore.open({ dir: otherDir, secret: otherSecret });
    try {
      const other = await SessionAuth.create({ secret: otherSecret, store: otherStore, clock });
      const foreign = await signIn(other);
      expect((await errorOf(auth.verify(foreign.token))).code).toBe('UNAUTHORIZED');
      expect((await other.verify(foreign.token)).address).toBe(alice.address.toLowerCase());
    } finally {
      await otherStore.close();
      await rm(otherDir, { recursive: true, force: true });
    }
  });

  it('refuses an expired token', async () => {
    const auth = await makeAuth();
    const { token } = await signIn(auth);
    now += 3599_000;
    await auth.verify(token);
    now += 2_000;
    const err = await errorOf(auth.verify(token));
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toMatch(/expired/);
  });

  it('keeps tokens valid and revocations in force across a restart', async () => {
    let auth = await makeAuth();
    const kept = await signIn(auth);
    const revoked = await signIn(auth);
    expect(await auth.revoke(revoked.token)).toEqual({ revoked: true });
    expect((await errorOf(auth.verify(revoked.token))).message).toMatch(/revoked/);
    expect((await errorOf(auth.revoke(revoked.token))).code).toBe('UNAUTHORIZED');

    auth = await restart();
    expect((await auth.verify(kept.token)).address).toBe(alice.address.toLowerCase());
    expect((await errorOf(auth.verify(revoked.token))).message).toMatch(/revoked/);
    expect(auth.stats()).toMatchObject({ sessions: 1, revocations: 1 });
  });

  it('carries a scope and enforces it with scopeAllows / assertSandboxAccess', async () => {
    const auth = await makeAuth();
    const s = await signIn(auth, alice, 'sandbox:sb-1');
    const claims = await auth.verify(s.token);
    expect(claims.scope).toBe('sandbox:sb-1');
    expect(scopeAllows(claims, 'sb-1')).toBe(true);
    expect(scopeAllows(claims, 'sb-2')).toBe(false);
    expect(scopeAllows({ address: claims.address }, 'anything')).toBe(true);
    expect(scopeAllows({ address: claims.address, scope: 'instance:i-9' }, 'i-9')).toBe(true);

    const owner = alice.address; // checksummed: compared case-insensitively
    expect(() => assertSandboxAccess(claims, { id: 'sb-1', owner })).not.toThrow();
    const wrongScope = (() => {
      try {
        assertSandboxAccess(claims, { id: 'sb-2', owner });
      } catch (e) {
        return e as RuntimeError;
      }
    })();
    expect(wrongScope?.code).toBe('FORBIDDEN');
    expect(wrongScope?.status).toBe(403);
    expect(() =>
      assertSandboxAccess({ address: claims.address }, { id: 'sb-1', owner: `0x${'ab'.repeat(20)}` }),
    ).toThrow(/may not access/);
    expect(sameAddress(alice.address, alice.address.toLowerCase())).toBe(true);
    expect(sameAddress('', '')).toBe(false);

    const ch = auth.createChallenge();
    const sig = await alice.signMessage({ message: ch.message });
    for (const scope of ['sandbox:', 'admin:x', 'sandbox:a b', 7]) {
      expect((await errorOf(auth.createSession({ nonce: ch.nonce, signature: sig, scope }))).code).toBe(
        'VALIDATION',
      );
    }
  });

  it('caps open challenges and sessions (503), freeing room as they expire', async () => {
    const auth = await makeAuth({ maxChallenges: 3, maxSessions: 2 });
    const chs = [auth.createChallenge(), auth.createChallenge(), auth.createChallenge()];
    const full = await errorOf(() => auth.createChallenge());
    expect(full.code).toBe('CAPACITY_EXHAUSTED');
    expect(full.status).toBe(503);
    for (const ch of chs.slice(0, 2)) {
      await auth.createSession({
        nonce: ch.nonce,
        signature: await alice.signMessage({ message: ch.message }),
      });
    }
    const ch3 = chs[2] as (typeof chs)[number];
    const sessionsFull = await errorOf(
      auth.createSession({ nonce: ch3.nonce, signature: await alice.signMessage({ message: ch3.message }) }),
    );
    expect(sessionsFull.code).toBe('CAPACITY_EXHAUSTED');
    // The session cap holds across a restart: the index is persisted.
    let restarted = await restart({ maxSessions: 2 });
    const ch4 = restarted.createChallenge();
    expect(
      (
        await errorOf(
          restarted.createSession({
            nonce: ch4.nonce,
            signature: await alice.signMessage({ message: ch4.message }),
          }),
        )
      ).code,
    ).toBe('CAPACITY_EXHAUSTED');
    // Once the sessions expire there is room again.
    now += 3601_000;
    restarted = await SessionAuth.create({ secret: SECRET, store, clock, limits: { maxSessions: 2 } });
    await signIn(restarted);
  });

  it('enforces the default 10,000 open-challenge cap', async () => {
    const auth = await makeAuth();
    for (let i = 0; i < 10_000; i++) auth.createChallenge();
    expect((await errorOf(() => auth.createChallenge())).code).toBe('CAPACITY_EXHAUSTED');
    now += 301_000;
    expect(auth.createChallenge().nonce).toMatch(/^[0-9a-f]{64}$/);
  });

  it('collect() removes expired challenges, sessions and revocations from memory and disk', async () => {
    const auth = await makeAuth();
    auth.createChallenge();
    const a = await signIn(auth);
    await signIn(auth);
    await auth.revoke(a.token);
    expect(auth.stats()).toEqual({ challenges: 1, sessions: 1, revocations: 1 });
    expect(await auth.collect()).toEqual({ challenges: 0, sessions: 0, revocations: 0 });
    now += 3601_000;
    expect(await auth.collect()).toEqual({ challenges: 1, sessions: 1, revocations: 1 });
    expect(auth.stats()).toEqual({ challenges: 0, sessions: 0, revocations: 0 });
    expect(await store.collection('auth-sessions').count()).toBe(0);
    expect(await store.collection('auth-revocations').count()).toBe(0);
  });

  it('refuses a malformed SESSION_AUTH_SECRET', async () => {
    expect((await errorOf(makeAuth(undefined, 'short'))).code).toBe('CONFIG_INVALID');
  });
});
