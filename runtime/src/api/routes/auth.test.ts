// Sign-in routes: EIP-4361 happy paths, the /api/auth/verify alias, the legacy switch, and every
// way a sign-in or a session must fail (real signatures).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { parseSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionAuth } from '../../auth/index.ts';
import { EncryptedStore } from '../../store/index.ts';
import { type Harness, startHarness, TEST_CHAIN_ID } from '../testing/harness.ts';
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

  const challenge = async (who: { address: string } = account) =>
    (await h.call('POST', '/api/auth/challenge', { body: { address: who.address } })).json;
  const session = (body: unknown) => h.call('POST', '/api/auth/session', { body });

  describe('happy', () => {
    it('challenge → signature → session → authenticated request → revoke', async () => {
      const ch = await challenge();
      expect(ch.nonce).toMatch(/^[0-9a-f]{80}$/);
      expect(ch.challenge).toBe(ch.message);
      expect(parseSiweMessage(ch.message)).toMatchObject({
        domain: new URL(h.url).host,
        uri: new URL(h.url).origin,
        chainId: TEST_CHAIN_ID,
        address: account.address,
        nonce: ch.nonce,
      });
      const s = await session({
        nonce: ch.nonce,
        address: account.address,
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
      const s = await session({ nonce: ch.nonce, address: account.address, signature: raw });
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
      const s = await session({
        nonce: ch.nonce,
        address: account.address,
        signature: `0x${'11'.repeat(64)}1b`,
      });
      expect(s.status).toBe(401);
    });

    it('signature over another message → 401; no address and no message → 401 (legacy is off)', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({
        message: 'Sign this message to authenticate with Tangle Sandbox.',
      });
      const named = await session({ nonce: ch.nonce, signature: sig, address: account.address });
      expect(named.status).toBe(401);
      const anon = await session({ nonce: ch.nonce, signature: sig });
      expect(anon.status).toBe(401);
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
      const first = await session({ nonce: ch.nonce, address: account.address, signature: sig });
      expect(first.status).toBe(200);
      tokens.push(first.json.token);
      expect((await session({ nonce: ch.nonce, address: account.address, signature: sig })).status).toBe(401);
    });

    it('unknown nonce, malformed nonce, malformed signature → 401', async () => {
      const sig = await account.signMessage({ message: 'x' });
      expect(
        (await session({ nonce: 'ab'.repeat(40), address: account.address, signature: sig })).status,
      ).toBe(401);
      expect((await session({ nonce: 'zz', address: account.address, signature: sig })).status).toBe(401);
      const ch = await challenge();
      expect((await session({ nonce: ch.nonce, signature: '0x1234' })).status).toBe(401);
      expect((await session({})).status).toBe(401);
    });

    it('expired challenge → 401', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({ message: ch.message });
      now += 301_000;
      try {
        expect((await session({ nonce: ch.nonce, address: account.address, signature: sig })).status).toBe(
          401,
        );
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
        const other = await SessionAuth.create({
          secret: 'b2'.repeat(32),
          store,
          siwe: { publicUrl: h.url, chainId: TEST_CHAIN_ID },
        });
        const ch = other.createChallenge({ address: account.address });
        const s = await other.createSession({
          nonce: ch.nonce,
          address: account.address,
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

    it('a challenge needs the address (400 with what to send) while legacy is off', async () => {
      const r = await h.call('POST', '/api/auth/challenge');
      expect(r.status).toBe(400);
      expect(r.json.error.message).toMatch(/address/);
      expect((await h.call('POST', '/api/auth/challenge', { body: { address: '0x12' } })).status).toBe(400);
      expect((await h.call('POST', '/api/auth/challenge', { rawBody: '{' })).status).toBe(400);
    });

    it('high-s signature (s → n−s) → 401', async () => {
      const ch = await challenge();
      const sig = await account.signMessage({ message: ch.message });
      const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const s = BigInt(`0x${sig.slice(66, 130)}`);
      const v = sig.endsWith('1b') ? '1c' : '1b';
      const high = `${sig.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${v}`;
      expect((await session({ nonce: ch.nonce, address: account.address, signature: high })).status).toBe(
        401,
      );
    });
  });

  describe("POST /api/auth/verify (alias for the seeds' front ends)", () => {
    it('{signature, challenge} with the signed EIP-4361 text → the same session', async () => {
      const ch = await challenge();
      const signature = await account.signMessage({ message: ch.challenge });
      const r = await h.call('POST', '/api/auth/verify', { body: { signature, challenge: ch.challenge } });
      expect(r.status).toBe(200);
      expect(r.json.address).toBe(account.address.toLowerCase());
      tokens.push(r.json.token);
      expect((await h.call('GET', '/api/sandboxes', { token: r.json.token })).status).toBe(200);
      // Same checks: single use, edited text refused, another operator's text refused.
      const again = await h.call('POST', '/api/auth/verify', {
        body: { signature, challenge: ch.challenge },
      });
      expect(again.status).toBe(401);
      const ch2 = await challenge();
      const edited = ch2.challenge.replace('Chain ID: 31337', 'Chain ID: 1');
      const esig = await account.signMessage({ message: edited });
      expect(
        (await h.call('POST', '/api/auth/verify', { body: { signature: esig, challenge: edited } })).status,
      ).toBe(401);
      expect((await h.call('POST', '/api/auth/verify', { body: { challenge: 'x' } })).status).toBe(401);
    });
  });
});

describe('legacy message switch (AUTH_ALLOW_LEGACY_MESSAGE=true)', () => {
  it('an old front end: challenge without a body, signs the plain text, /api/auth/verify', async () => {
    const h = await startHarness({ allowLegacyMessage: true });
    const account = privateKeyToAccount(generatePrivateKey());
    try {
      const ch = (await h.call('POST', '/api/auth/challenge')).json;
      expect(ch.challenge).toBe(
        `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${ch.nonce}\nExpires: ${ch.expires_at}`,
      );
      const signature = await account.signMessage({ message: ch.challenge });
      const r = await h.call('POST', '/api/auth/verify', { body: { signature, challenge: ch.challenge } });
      expect(r.status).toBe(200);
      expect(r.json.address).toBe(account.address.toLowerCase());
      // New clients still get EIP-4361 when they name their address.
      const siwe = (await h.call('POST', '/api/auth/challenge', { body: { address: account.address } })).json;
      expect(parseSiweMessage(siwe.message).domain).toBe(new URL(h.url).host);
    } finally {
      await h.close();
    }
  });
});

describe('auth capacity', () => {
  it('beyond the session cap → 503 CAPACITY_EXHAUSTED with retry_after_ms', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cap-auth-'));
    const store = await EncryptedStore.open({ dir, secret: 'c3'.repeat(32) });
    let url = '';
    const capped = await SessionAuth.create({
      secret: 'c3'.repeat(32),
      store,
      siwe: { publicUrl: () => url, chainId: TEST_CHAIN_ID },
      limits: { maxSessions: 1 },
    });
    const h = await startHarness({ deps: { sessions: capped } });
    url = h.url;
    try {
      await h.signIn(privateKeyToAccount(generatePrivateKey()));
      const who = privateKeyToAccount(generatePrivateKey());
      const ch = (await h.call('POST', '/api/auth/challenge', { body: { address: who.address } })).json;
      const r = await h.call('POST', '/api/auth/session', {
        body: {
          nonce: ch.nonce,
          address: who.address,
          signature: await who.signMessage({ message: ch.message }),
        },
      });
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
