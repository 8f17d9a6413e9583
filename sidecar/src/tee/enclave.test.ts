// The CVM side of TEE_BACKEND=phala, on a real sidecar process: the sealing key made at boot,
// quotes from the dstack agent (a unix-socket fake answering in the real sample's shape) whose
// report_data is the spec §4 binding over (context, key, caller nonce), and sealed secrets opened
// here into the agent's env. Attacks: another sandbox's body, a replay, a lying agent.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBinding, contextString, fromHex, sealSecrets } from '@agent-sandbox/attestation';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { type FakeDstack, startFakeDstack } from '../testing/fake-dstack.ts';
import { ownerChannel } from '../testing/owner-channel.ts';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';
import { DstackClient } from './dstack-client.ts';

const operator = `0x${'ab'.repeat(20)}`;
const owner = privateKeyToAccount(`0x${'c3'.repeat(32)}`);
const sandboxId = `sbx-${'1'.repeat(32)}`;
const ctx = contextString({
  chainId: 31337,
  serviceId: 7,
  sandboxId,
  operator,
  owner: owner.address,
});
const nonce = () => randomBytes(32).toString('hex');
/** The report_data inside a TD 1.0 quote (header 48 + body offset 520). */
const quoteReportData = (quoteHex: string) => fromHex(quoteHex).subarray(568, 632);

let dir: string;
let dstack: FakeDstack;
let fx: SidecarFixture;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sidecar-tee-'));
  dstack = await startFakeDstack(join(dir, 'dstack.sock'));
  fx = await startSidecarFixture({
    SIDECAR_TEE: 'dstack',
    SIDECAR_TEE_CONTEXT: ctx,
    SIDECAR_DSTACK_SOCKET: dstack.socketPath,
  });
});
afterAll(async () => {
  await fx?.close();
  await dstack?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('sidecar in a dstack CVM (SIDECAR_TEE=dstack)', () => {
  it('quotes over the binding of its context, its own key and the caller nonce', async () => {
    const n = nonce();
    const r = await fx.call('GET', `/tee/public-key?nonce=${n}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      tee: 'tdx',
      algorithm: 'hpke-x25519-sha256-chacha20poly1305',
      binding: { ctx, nonce: n, pubkey: r.json.pubkey },
    });
    expect(typeof r.json.event_log).toBe('string');
    expect(dstack.calls.at(-1)).toEqual({ path: '/GetQuote', body: { report_data: r.json.report_data } });
    // The quote itself carries the binding: a verifier recomputes it from its own ctx and nonce.
    checkBinding(quoteReportData(r.json.evidence), ctx, fromHex(r.json.pubkey), fromHex(n));
    // The same key each time (made once at boot), a fresh quote per nonce.
    const again = await fx.call('GET', `/tee/attestation?nonce=${nonce()}`);
    expect(again.json.pubkey).toBe(r.json.pubkey);
    expect(again.json.evidence).not.toBe(r.json.evidence);
    expect((await fx.call('GET', '/tee/attestation')).status).toBe(400);
    expect((await fx.call('GET', '/tee/attestation?nonce=abcd')).status).toBe(400);
    expect((await fx.call('GET', `/tee/attestation?nonce=${n}`, undefined, { token: null })).status).toBe(
      401,
    );
  });

  it('opens a body sealed to its key into the agent env; refuses a replay and another sandbox’s body', async () => {
    const pk = await fx.call('GET', `/tee/public-key?nonce=${nonce()}`);
    const pub = fromHex(pk.json.pubkey);
    const ch = ownerChannel({
      url: fx.sidecar.url,
      operatorToken: fx.token,
      pubkeyHex: pk.json.pubkey,
      ctx,
      owner,
    });
    // biome-ignore lint/suspicious/noExplicitAny: test-only convenience
    const call = async (
      method: 'GET' | 'POST' | 'PUT',
      path: string,
      body?: unknown,
    ): Promise<{ status: number; json: any }> => ch.client.json(method, path, body);
    const body = sealSecrets(pub, ctx, sandboxId, { SEALED_TOKEN: 'only-the-enclave-sees-this' });
    expect((await call('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: true,
      secrets_count: 1,
    });
    const run = await call('POST', '/terminals/commands', { command: 'echo "$SEALED_TOKEN"' });
    expect(run.json.result.stdout.trim()).toBe('only-the-enclave-sees-this');
    // The owner's PUT /env (it replaces the user env) does not wipe what was sealed.
    await call('PUT', '/env', { env: { OTHER: 'x' } });
    const after = await call('POST', '/terminals/commands', { command: 'echo "$SEALED_TOKEN $OTHER"' });
    expect(after.json.result.stdout.trim()).toBe('only-the-enclave-sees-this x');

    const refused = { success: false, secrets_count: 0 };
    // Replayed: the same enc again.
    expect((await call('POST', '/tee/sealed-secrets', body)).json).toEqual(refused);
    // Sealed to this key but for another sandbox (its context and aad), e.g. by a confused client.
    const otherId = `sbx-${'2'.repeat(32)}`;
    const otherCtx = contextString({
      chainId: 31337,
      serviceId: 7,
      sandboxId: otherId,
      operator,
      owner: owner.address,
    });
    expect(
      (await call('POST', '/tee/sealed-secrets', sealSecrets(pub, otherCtx, otherId, { A: 'b' }))).json,
    ).toEqual(refused);
    // Sealed to a key the operator swapped in: it cannot open here either.
    const swapped = fromHex(randomBytes(32).toString('hex'));
    expect(
      (await call('POST', '/tee/sealed-secrets', sealSecrets(swapped, ctx, sandboxId, { A: 'b' }))).json,
    ).toEqual(refused);
    // A platform-owned name inside a valid body is refused too (it would configure the sidecar).
    expect(
      (await call('POST', '/tee/sealed-secrets', sealSecrets(pub, ctx, sandboxId, { LD_PRELOAD: '/x' })))
        .json,
    ).toEqual(refused);
    expect((await call('POST', '/tee/sealed-secrets', { v: 1 })).json).toEqual(refused);
  });

  it('fails closed when the agent lies about report_data or is not there', async () => {
    dstack.honest = false;
    try {
      const r = await fx.call('GET', `/tee/attestation?nonce=${nonce()}`);
      expect(r.status).toBe(503);
      expect(r.json.error.message).toMatch(/does not carry the report_data/);
    } finally {
      dstack.honest = true;
    }
    await expect(new DstackClient(join(dir, 'none.sock')).getQuote(new Uint8Array(64))).rejects.toThrow(
      /is this a dstack CVM/,
    );
  });

  it('refuses to boot in TEE mode without a well-formed context', () => {
    const env = { SIDECAR_AUTH_TOKEN: 'x'.repeat(32), SIDECAR_TEE: 'dstack' };
    expect(() => loadConfig(env)).toThrow(/SIDECAR_TEE_CONTEXT must be/);
    expect(() => loadConfig({ ...env, SIDECAR_TEE_CONTEXT: 'a:b' })).toThrow(/SIDECAR_TEE_CONTEXT must be/);
    expect(loadConfig({ ...env, SIDECAR_TEE_CONTEXT: ctx }).tee).toEqual({
      kind: 'dstack',
      context: ctx,
      dstackSocket: '/run/tee/dstack.sock',
    });
  });
});
