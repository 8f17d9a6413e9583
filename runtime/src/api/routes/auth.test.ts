// Sign-in routes: happy paths and every way a sign-in or a session must fail (real signatures).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionAuth } from '../../auth/index.ts';
import { EncryptedStore } from '../../store/index.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

describe('auth routes', () => {
  let h: Harness;
  let now = Date.now();
  const account = privateKeyToAccount(generatePrivateKey());
  const tokens: string[] = [];
  beforeAll(async () => {
    h = await startHarness({ clock: () => now, config: { rateLimits: { auth: 1000 } } });
  });
  afterAll(async () => {
    assertNoLeaks(h, [], tokens);
    await h.close();
  });

  const challenge = async () => (await h.call('POST', '/api/auth/challenge')).json;
  const session = (body: unknown) => h.call('POST', '/api/auth/session', { body });

  describe('happy', () => {
    it('challenge → signature → session → authenticated request → revoke', async () => {
      const ch = await challenge();
      expect(ch.nonce).toMatch(/^[0-9a-f]{64}$/);
      expect(ch.message).toBe(
        `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${ch.nonce}\nExpires: ${ch.expires_at}`,
      );
      const s = await session({
        nonce: ch.nonce,
        signature: await account.signMessage({ message: ch.message }),
      });
      expect(s.status).toBe(200);
      expect(s.json.address).toBe(account.address.toLowerCase());
      expect(s.json.token).toMatch(/^v4\.local\./);
      tokens.push(s.json.token);
      expect((await h.call('GET', '/api/sandboxes', { token: s.json.token })).status).toBe(200);
      const del = await h.call('DELETE', '/api/auth/session', { token: s.json.token });
      expect(del.json).toEqual({ revoked: true });
      const after = await h.call('GET', '/api/sandboxes', { token: s.json.token });
      expect(after.status).toBe(401);
      expect(after.json.error.code).toBe('UNAUTHORIZED');
    });

    it('accepts a signature without 0x and with v in {0,1}', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({ message: ch.message });
      const v = Number.parseInt(sig.slice(130), 16) - 27;
      const raw = `${sig.slice(2, 130)}${v.toString(16).padStart(2, '0')}`;
      const s = await session({ nonce: ch.nonce, signature: raw });
      expect(s.status).toBe(200);
      tokens.push(s.json.token);
    });

    it('issues a scoped session', async () => {
      const token = await h.signIn(account, 'sandbox:sbx-abc');
      tokens.push(token);
      expect((await h.call('GET', '/api/sandboxes', { token })).status).toBe(200);
    });
  });

  describe('security', () => {
    it('forged signature → 401', async () => {
      const ch = await challenge();
      const s = await session({ nonce: ch.nonce, signature: `0x${'11'.repeat(64)}1b` });
      expect(s.status).toBe(401);
    });

    it('signature over another message → 401 when the address is named, else a session for a stranger', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({
        message: 'Sign this message to authenticate with Tangle Sandbox.',
      });
      const named = await session({ nonce: ch.nonce, signature: sig, address: account.address });
      expect(named.status).toBe(401);
      // Without `address`, recovery over the challenge text yields some other address whose key
      // nobody holds: never a session for the signer.
      const ch2 = await challenge();
      const anon = await session({ nonce: ch2.nonce, signature: sig });
      if (anon.status === 200) {
        tokens.push(anon.json.token);
        expect(anon.json.address).not.toBe(account.address.toLowerCase());
      } else expect(anon.status).toBe(401);
    });

    it('a signature by another wallet with this wallet’s address named → 401', async () => {
      const ch = await challenge();
      const other = privateKeyToAccount(generatePrivateKey());
      const sig = await other.signMessage({ message: ch.message });
      expect((await session({ nonce: ch.nonce, signature: sig, address: account.address })).status).toBe(401);
    });

    it('replayed nonce → 401', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({ message: ch.message });
      const first = await session({ nonce: ch.nonce, signature: sig });
      expect(first.status).toBe(200);
      tokens.push(first.json.token);
      expect((await session({ nonce: ch.nonce, signature: sig })).status).toBe(401);
    });

    it('unknown nonce, malformed nonce, malformed signature → 401', async () => {
      const sig = await account.signMessage({ message: 'x' });
      expect((await session({ nonce: 'ab'.repeat(32), signature: sig })).status).toBe(401);
      expect((await session({ nonce: 'zz', signature: sig })).status).toBe(401);
      const ch = await challenge();
      expect((await session({ nonce: ch.nonce, signature: '0x1234' })).status).toBe(401);
      expect((await session({})).status).toBe(401);
    });

    it('expired challenge → 401', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({ message: ch.message });
      now += 301_000;
      try {
        expect((await session({ nonce: ch.nonce, signature: sig })).status).toBe(401);
      } finally {
        now -= 301_000;
      }
    });

    it('expired token → 401', async () => {
      const token = await h.signIn(account);
      tokens.push(token);
      now += 3601_000;
      try {
        expect((await h.call('GET', '/api/sandboxes', { token })).status).toBe(401);
      } finally {
        now -= 3601_000;
      }
    });

    it('tampered token → 401', async () => {
      const token = await h.signIn(account);
      tokens.push(token);
      const i = 20;
      const flipped = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      expect((await h.call('GET', '/api/sandboxes', { token: flipped })).status).toBe(401);
      expect((await h.call('GET', '/api/sandboxes', { token: `${token}x` })).status).toBe(401);
      expect((await h.call('GET', '/api/sandboxes', { token: 'v2.local.abc' })).status).toBe(401);
      const noBearer = await h.call('GET', '/api/sandboxes', { headers: { authorization: token } });
      expect(noBearer.status).toBe(401);
    });

    it('token minted under another SESSION_AUTH_SECRET → 401', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'other-auth-'));
      const store = await EncryptedStore.open({ dir, secret: 'b2'.repeat(32) });
      try {
        const other = await SessionAuth.create({ secret: 'b2'.repeat(32), store });
        const ch = other.createChallenge();
        const s = await other.createSession({
          nonce: ch.nonce,
          signature: await account.signMessage({ message: ch.message }),
        });
        tokens.push(s.token);
        expect((await h.call('GET', '/api/sandboxes', { token: s.token })).status).toBe(401);
      } finally {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('revoked token stays refused after an operator restart; revoke without a valid token → 401', async () => {
      const token = await h.signIn(account);
      tokens.push(token);
      expect((await h.call('DELETE', '/api/auth/session', { token })).status).toBe(200);
      await h.restart();
      expect((await h.call('GET', '/api/sandboxes', { token })).status).toBe(401);
      expect((await h.call('DELETE', '/api/auth/session', { token })).status).toBe(401);
      expect((await h.call('DELETE', '/api/auth/session')).status).toBe(401);
      // A valid token from before the restart still works.
      const fresh = await h.signIn(account);
      tokens.push(fresh);
      await h.restart();
      expect((await h.call('GET', '/api/sandboxes', { token: fresh })).status).toBe(200);
    });

    it('malformed JSON to /api/auth/session → 400', async () => {
      const r = await h.call('POST', '/api/auth/session', { rawBody: '{"nonce":' });
      expect(r.status).toBe(400);
    });
  });
});

describe('auth capacity', () => {
  it('beyond the open-challenge cap → 503 CAPACITY_EXHAUSTED with retry_after_ms', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cap-auth-'));
    const store = await EncryptedStore.open({ dir, secret: 'c3'.repeat(32) });
    const capped = await SessionAuth.create({ secret: 'c3'.repeat(32), store, limits: { maxChallenges: 2 } });
    const h = await startHarness({ deps: { sessions: capped } });
    try {
      expect((await h.call('POST', '/api/auth/challenge')).status).toBe(200);
      expect((await h.call('POST', '/api/auth/challenge')).status).toBe(200);
      const r = await h.call('POST', '/api/auth/challenge');
      expect(r.status).toBe(503);
      expect(r.json.error.code).toBe('CAPACITY_EXHAUSTED');
      expect(r.json.error.retry_after_ms).toBeGreaterThan(0);
      expect(r.headers.get('retry-after')).toBeTruthy();
    } finally {
      await h.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
