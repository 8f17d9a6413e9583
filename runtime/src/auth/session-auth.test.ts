// Session auth with real secp256k1 signatures (viem local accounts) and a real on-disk store:
// EIP-4361 messages bound to the operator, stateless challenges, low-s, caps, the legacy switch.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Hex, hexToBytes } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isRuntimeError, type RuntimeError } from '../errors.ts';
import { EncryptedStore } from '../store/index.ts';
import { siweMessage } from './challenge.ts';
import { assertSandboxAccess, sameAddress, scopeAllows } from './scope.ts';
import { SessionAuth } from './session-auth.ts';
import type { SessionAuthLimits } from './session-types.ts';

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

const PUBLIC_URL = 'https://op-a.example:8443';
const SIWE = { publicUrl: PUBLIC_URL, chainId: 31337 };

function makeAuth(
  limits?: Partial<SessionAuthLimits>,
  secret = SECRET,
  extra: { allowLegacyMessage?: boolean; publicUrl?: string } = {},
): Promise<SessionAuth> {
  return SessionAuth.create({
    secret,
    store,
    clock,
    siwe: { ...SIWE, ...(extra.publicUrl ? { publicUrl: extra.publicUrl } : {}) },
    ...(extra.allowLegacyMessage ? { allowLegacyMessage: true } : {}),
    ...(limits ? { limits } : {}),
  });
}

/** A challenge for `account` (default Alice). */
const chFor = (auth: SessionAuth, account = alice) => auth.createChallenge({ address: account.address });

async function signIn(auth: SessionAuth, account = alice, scope?: string) {
  const ch = chFor(auth, account);
  const signature = await account.signMessage({ message: ch.message });
  return auth.createSession({
    nonce: ch.nonce,
    address: account.address,
    signature,
    ...(scope ? { scope } : {}),
  });
}

/** The same signature with s replaced by n − s (and v flipped): valid for ecrecover, high-s. */
function highS(sig: Hex): string {
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = BigInt(`0x${sig.slice(66, 130)}`);
  const v = Number.parseInt(sig.slice(130), 16);
  return `${sig.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}`;
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
  it('signs in with a real signature over an EIP-4361 message naming the operator', async () => {
    const auth = await makeAuth();
    const ch = chFor(auth);
    expect(ch.nonce).toMatch(/^[0-9a-f]{80}$/);
    const nowSec = Math.floor(now / 1000);
    expect(ch.expires_at).toBe(nowSec + 300);
    const m = parseSiweMessage(ch.message);
    expect(m).toMatchObject({
      domain: 'op-a.example:8443',
      uri: PUBLIC_URL,
      chainId: 31337,
      address: alice.address,
      nonce: ch.nonce,
      version: '1',
    });
    expect(m.issuedAt?.getTime()).toBe(nowSec * 1000);
    expect(m.expirationTime?.getTime()).toBe((nowSec + 300) * 1000);
    const signature = await alice.signMessage({ message: ch.message });
    const session = await auth.createSession({ nonce: ch.nonce, address: alice.address, signature });
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
      const ch = chFor(auth);
      const sig = await alice.signMessage({ message: ch.message });
      const v = hexToBytes(sig)[64] as number;
      let s: string = form === 'no0x' ? sig : withV(sig, v - 27);
      if (form !== 'v01') s = s.slice(2);
      const session = await auth.createSession({ nonce: ch.nonce, address: alice.address, signature: s });
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
      const ch = chFor(auth);
      const err = await errorOf(
        auth.createSession({ nonce: ch.nonce, address: alice.address, signature: bad }),
      );
      expect(err.code).toBe('UNAUTHORIZED');
      expect(err.status).toBe(401);
    }
  });

  it('never signs in as the victim with a forged signature', async () => {
    const auth = await makeAuth();
    // r = 0 is not a curve point: recovery fails outright.
    let ch = chFor(auth);
    expect(
      (
        await errorOf(
          auth.createSession({
            nonce: ch.nonce,
            address: alice.address,
            signature: `0x${'00'.repeat(64)}1b`,
          }),
        )
      ).code,
    ).toBe('UNAUTHORIZED');
    // Alice's real signature with s altered recovers some other key, never Alice.
    ch = chFor(auth);
    const real = await alice.signMessage({ message: ch.message });
    const forged = `${real.slice(0, 100)}${real[100] === 'a' ? 'b' : 'a'}${real.slice(101)}`;
    const res = await auth
      .createSession({ nonce: ch.nonce, address: alice.address, signature: forged })
      .catch((e) => e);
    if (isRuntimeError(res)) expect(res.code).toBe('UNAUTHORIZED');
    else expect(res.address).not.toBe(alice.address.toLowerCase());
    // When the client names the address it expects, a mismatch is refused.
    ch = chFor(auth);
    const mallory = privateKeyToAccount(generatePrivateKey());
    const sig = await mallory.signMessage({ message: ch.message });
    const err = await errorOf(
      auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sig }),
    );
    expect(err.code).toBe('UNAUTHORIZED');
  });

  it('does not accept a signature over another message', async () => {
    const auth = await makeAuth();
    const ch = chFor(auth);
    const other = chFor(auth);
    const sigOverOther = await alice.signMessage({ message: other.message });
    const e1 = await errorOf(
      auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sigOverOther }),
    );
    expect(e1.code).toBe('UNAUTHORIZED');
    const ch2 = chFor(auth);
    const sigOverEdited = await alice.signMessage({ message: `${ch2.message} ` });
    const e2 = await errorOf(
      auth.createSession({ nonce: ch2.nonce, address: alice.address, signature: sigOverEdited }),
    );
    expect(e2.code).toBe('UNAUTHORIZED');
  });

  it('redeems a challenge once; a failed attempt stores nothing and burns nothing', async () => {
    const auth = await makeAuth();
    const ch = chFor(auth);
    const sig = await alice.signMessage({ message: ch.message });
    await errorOf(auth.createSession({ nonce: ch.nonce, address: alice.address, signature: '0x00' }));
    expect(await store.collection('auth-redeemed').count()).toBe(0);
    await auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sig });
    const replay = await errorOf(
      auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sig }),
    );
    expect(replay.code).toBe('UNAUTHORIZED');
    expect(replay.message).toMatch(/already used/);
    // Still refused after a restart: redeemed nonces persist until they expire.
    const again = await restart();
    expect(
      (await errorOf(again.createSession({ nonce: ch.nonce, address: alice.address, signature: sig })))
        .message,
    ).toMatch(/already used/);
    expect(
      (await errorOf(again.createSession({ nonce: 'not-hex', address: alice.address, signature: sig }))).code,
    ).toBe('UNAUTHORIZED');
  });

  it('refuses a nonce minted for another address, by another operator, or edited', async () => {
    const auth = await makeAuth();
    const bob = privateKeyToAccount(generatePrivateKey());
    // Bob's challenge, signed by Alice over a message naming Alice with Bob's nonce.
    const forBob = chFor(auth, bob);
    const n = { iat: forBob.issued_at, exp: forBob.expires_at };
    const asAlice = siweMessage(SIWE, alice.address, forBob.nonce, n);
    const sig = await alice.signMessage({ message: asAlice });
    expect(
      (await errorOf(auth.createSession({ nonce: forBob.nonce, address: alice.address, signature: sig })))
        .message,
    ).toMatch(/unknown challenge/);
    // A nonce of another operator (another secret) is unknown here.
    const other = await makeAuth(undefined, randomBytes(32).toString('hex'));
    const foreign = chFor(other);
    const fsig = await alice.signMessage({ message: foreign.message });
    expect(
      (await errorOf(auth.createSession({ nonce: foreign.nonce, address: alice.address, signature: fsig })))
        .message,
    ).toMatch(/unknown challenge/);
    // An extended expiry breaks the MAC.
    const ch = chFor(auth);
    const raw = Buffer.from(ch.nonce, 'hex');
    raw.writeUInt32BE(ch.expires_at + 86_400, 20);
    const edited = raw.toString('hex');
    const esig = await alice.signMessage({
      message: siweMessage(SIWE, alice.address, edited, { iat: ch.issued_at, exp: ch.expires_at + 86_400 }),
    });
    expect(
      (await errorOf(auth.createSession({ nonce: edited, address: alice.address, signature: esig }))).message,
    ).toMatch(/unknown challenge/);
  });

  it('refuses a signature relayed from another operator: the message names that one', async () => {
    const honest = await makeAuth();
    // The relaying operator B has the same secret even (worst case: nonce MACs verify) but another URL.
    const relay = await makeAuth(undefined, SECRET, { publicUrl: 'https://op-b.example' });
    const ch = chFor(relay);
    expect(parseSiweMessage(ch.message).domain).toBe('op-b.example');
    const sig = await alice.signMessage({ message: ch.message });
    const viaNonce = await errorOf(
      honest.createSession({ nonce: ch.nonce, address: alice.address, signature: sig }),
    );
    expect(viaNonce.code).toBe('UNAUTHORIZED');
    const viaMessage = await errorOf(honest.createSession({ message: ch.message, signature: sig }));
    expect(viaMessage.message).toMatch(/not issued by this operator/);
    // Another chain id is refused the same way.
    const m = parseSiweMessage(ch.message);
    const otherChain = createSiweMessage({
      ...(m as Parameters<typeof createSiweMessage>[0]),
      domain: 'op-a.example:8443',
      uri: PUBLIC_URL,
      chainId: 1,
    });
    const csig = await alice.signMessage({ message: otherChain });
    expect((await errorOf(honest.createSession({ message: otherChain, signature: csig }))).code).toBe(
      'UNAUTHORIZED',
    );
    // The honest operator's own message, sent back whole, works.
    const own = chFor(honest);
    const s = await honest.createSession({
      message: own.message,
      signature: await alice.signMessage({ message: own.message }),
    });
    expect(s.address).toBe(alice.address.toLowerCase());
  });

  it('refuses high-s signatures (EIP-2) that ecrecover would accept', async () => {
    const auth = await makeAuth();
    const ch = chFor(auth);
    const sig = await alice.signMessage({ message: ch.message });
    const err = await errorOf(
      auth.createSession({ nonce: ch.nonce, address: alice.address, signature: highS(sig) }),
    );
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toMatch(/EIP-2/);
    await auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sig });
  });

  it('legacy plain message only behind the switch', async () => {
    const strict = await makeAuth();
    expect((await errorOf(() => strict.createChallenge())).code).toBe('VALIDATION');
    const lax = await makeAuth(undefined, SECRET, { allowLegacyMessage: true });
    const ch = lax.createChallenge();
    expect(ch.message).toBe(
      `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${ch.nonce}\nExpires: ${ch.expires_at}`,
    );
    const sig = await alice.signMessage({ message: ch.message });
    // The strict operator (same secret, so the MAC checks) still refuses it.
    expect((await errorOf(strict.createSession({ nonce: ch.nonce, signature: sig }))).message).toMatch(
      /legacy/,
    );
    expect((await lax.createSession({ nonce: ch.nonce, signature: sig })).address).toBe(
      alice.address.toLowerCase(),
    );
  });

  it('refuses an expired challenge (valid through its expiry second)', async () => {
    const auth = await makeAuth();
    const a = chFor(auth);
    const b = chFor(auth);
    now += 300_000 - 250; // exactly the expiry second
    await auth.createSession({
      nonce: a.nonce,
      address: alice.address,
      signature: await alice.signMessage({ message: a.message }),
    });
    now += 1000;
    const err = await errorOf(
      auth.createSession({
        nonce: b.nonce,
        address: alice.address,
        signature: await alice.signMessage({ message: b.message }),
      }),
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
      const other = await SessionAuth.create({ secret: otherSecret, store: otherStore, clock, siwe: SIWE });
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

    const ch = chFor(auth);
    const sig = await alice.signMessage({ message: ch.message });
    for (const scope of ['sandbox:', 'admin:x', 'sandbox:a b', 7]) {
      expect(
        (
          await errorOf(
            auth.createSession({ nonce: ch.nonce, address: alice.address, signature: sig, scope }),
          )
        ).code,
      ).toBe('VALIDATION');
    }
  });

  it('caps sessions (503), freeing room as they expire', async () => {
    const auth = await makeAuth({ maxSessions: 2 });
    const bob = privateKeyToAccount(generatePrivateKey());
    await signIn(auth);
    await signIn(auth, bob);
    expect((await errorOf(signIn(auth))).code).toBe('CAPACITY_EXHAUSTED');
    // The session cap holds across a restart: the index is persisted.
    let restarted = await restart({ maxSessions: 2 });
    expect((await errorOf(signIn(restarted))).code).toBe('CAPACITY_EXHAUSTED');
    // Once the sessions expire there is room again.
    now += 3601_000;
    restarted = await makeAuth({ maxSessions: 2 });
    await signIn(restarted);
  });

  it('caps sessions per address: the oldest is revoked, other addresses unaffected', async () => {
    const auth = await makeAuth({ maxSessionsPerAddress: 3 });
    const bob = privateKeyToAccount(generatePrivateKey());
    const bobs = await signIn(auth, bob);
    const mine = [];
    for (let i = 0; i < 5; i++) mine.push(await signIn(auth));
    for (const old of mine.slice(0, 2))
      expect((await errorOf(auth.verify(old.token))).message).toMatch(/revoked/);
    for (const kept of mine.slice(2)) await auth.verify(kept.token);
    await auth.verify(bobs.token);
    expect(auth.stats().sessions).toBe(4);
    // The per-address order survives a restart.
    const again = await restart({ maxSessionsPerAddress: 3 });
    await signIn(again);
    expect((await errorOf(again.verify(mine[2]!.token))).message).toMatch(/revoked/);
    await again.verify(bobs.token);
  });

  it('50,000 challenges for one address store nothing and lock no one out', async () => {
    const auth = await makeAuth();
    const mallory = privateKeyToAccount(generatePrivateKey());
    for (let i = 0; i < 50_000; i++) auth.createChallenge({ address: mallory.address });
    expect(auth.stats().challenges).toBe(0);
    expect(await store.collection('auth-redeemed').count()).toBe(0);
    const s = await signIn(auth);
    expect(s.address).toBe(alice.address.toLowerCase());
  });

  it('collect() removes expired challenges, sessions and revocations from memory and disk', async () => {
    const auth = await makeAuth();
    chFor(auth);
    const a = await signIn(auth);
    await signIn(auth);
    await auth.revoke(a.token);
    expect(auth.stats()).toEqual({ challenges: 2, sessions: 1, revocations: 1 });
    expect(await auth.collect()).toEqual({ challenges: 0, sessions: 0, revocations: 0 });
    now += 3601_000;
    expect(await auth.collect()).toEqual({ challenges: 2, sessions: 1, revocations: 1 });
    expect(auth.stats()).toEqual({ challenges: 0, sessions: 0, revocations: 0 });
    expect(await store.collection('auth-redeemed').count()).toBe(0);
    expect(await store.collection('auth-sessions').count()).toBe(0);
    expect(await store.collection('auth-revocations').count()).toBe(0);
  });

  it('refuses a malformed SESSION_AUTH_SECRET', async () => {
    expect((await errorOf(makeAuth(undefined, 'short'))).code).toBe('CONFIG_INVALID');
  });
});
