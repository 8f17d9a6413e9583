// TEE_BACKEND=phala end to end against local servers speaking the wire formats: a fake Phala
// Cloud REST API whose "CVM" is a real sidecar process, started with the env the operator
// encrypted to the CVM key (decrypted here as Phala's KMS would) and a dstack agent socket
// answering in the real sample's shape. The operator deploys, waits, forwards; the key and the
// secrets stay in the sidecar. No real CVM or Phala account was reached.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChannelClient,
  checkBinding,
  contextString,
  fromHex,
  onChainNonce,
  parseAttestationDoc,
  sealSecrets,
} from '@agent-sandbox/attestation';
import { type FakeDstack, startFakeDstack } from '@agent-sandbox/sidecar/testing';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTeeBackend } from '../config.ts';
import { TeeService } from '../service.ts';
import { FAKE_PHALA_API_KEY, type FakePhala, startFakePhala } from '../testing/fake-phala.ts';
import type { PhalaTeeBackend } from './backend.ts';

const operator = `0x${'cd'.repeat(20)}`;
const owner = privateKeyToAccount(`0x${'d4'.repeat(32)}`);
const contextFor = (id: string) =>
  contextString({ chainId: 31337, serviceId: 9, sandboxId: id, operator, owner: owner.address });
const sandboxId = `sbx-${'a'.repeat(32)}`;
const quoteReportData = (hex: string) => fromHex(hex).subarray(568, 632);
const nonceHex = () => randomBytes(32).toString('hex');

let dir: string;
let dstack: FakeDstack;
let phala: FakePhala;
const calls = () => phala.calls;
let backend: PhalaTeeBackend;
let service: TeeService;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'phala-e2e-'));
  dstack = await startFakeDstack(join(dir, 'dstack.sock'));
  phala = await startFakePhala({ dstackSocket: dstack.socketPath });
  const endpoint = phala.endpoint;
  backend = (await openTeeBackend({
    backend: 'phala',
    tsmRoot: '/nonexistent',
    pccsUrl: 'http://127.0.0.1:1',
    testMode: false,
    phala: {
      apiKey: FAKE_PHALA_API_KEY,
      endpoint,
      image: `reg.example/sandbox@sha256:${'e'.repeat(64)}`,
      pollMs: 10,
    },
  })) as PhalaTeeBackend;
  service = new TeeService({
    backend,
    contextFor,
    injectSecrets: () => {
      throw new Error('phala secrets must never reach the operator');
    },
    verify: { acceptedTcbStatuses: ['UpToDate'], allowList: [], requirePinned: true },
  });
});
afterAll(async () => {
  await phala?.close();
  await dstack?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('TEE_BACKEND=phala (fake Phala Cloud, real sidecar as the CVM, fake dstack socket)', () => {
  it('deploys the CVM with only ciphertext env, waits for it to run, and delivers no env of its own', async () => {
    const d = await backend.deploy({
      sandboxId,
      ctx: contextFor(sandboxId),
      image: 'ignored',
      cpuCores: 1,
      memoryMb: 1024,
      diskGb: 5,
      env: { GREETING: 'hello' },
    });
    const cvm = phala.cvm()!;
    expect(d).toMatchObject({ sandboxId, deploymentId: cvm.id, sidecarUrl: phala.cvmUrl() });
    expect(phala.statePolls).toBeGreaterThanOrEqual(3);
    const cvmToken = cvm.token;
    // The sidecar token and context went encrypted only.
    const create = calls().find((c) => c.url.endsWith('/cvms/from_cvm_configuration'))!;
    expect(cvmToken).toMatch(/^[0-9a-f]{64}$/);
    expect(create.body).not.toContain(cvmToken);
    expect(create.body).not.toContain(contextFor(sandboxId));
    expect(JSON.parse(create.body).compose_manifest.docker_compose_file).toContain(
      `reg.example/sandbox@sha256:${'e'.repeat(64)}`,
    );
    // The operator delivers nothing over PUT /env: in the CVM only the owner sets env.
    expect(calls().some((c) => c.url.endsWith('/env'))).toBe(false);
    expect((await phala.inCvm('echo "[$GREETING]"', owner)).stdout.trim()).toBe('[]');
    // And the operator's own token runs nothing there.
    const asOperator = await cvm.sidecar.call(
      'POST',
      '/terminals/commands',
      { command: 'id' },
      { token: cvmToken },
    );
    expect(asOperator.status).toBe(403);
  });

  it('forwards evidence bound to the client nonce and the CVM’s key; the operator cannot swap it', async () => {
    const n = nonceHex();
    const v = (await service.publicKey(sandboxId, n)) as unknown as Record<string, string> & {
      binding: { ctx: string; nonce: string; pubkey: string };
      verification: { verdict: string; reason?: string };
    };
    expect(v.binding).toEqual({ ctx: contextFor(sandboxId), nonce: n, pubkey: v.pubkey });
    expect(v.algorithm).toBe('hpke-x25519-sha256-chacha20poly1305');
    // The client's check, from its own ctx and nonce, against the quote's report_data.
    checkBinding(quoteReportData(v.evidence!), contextFor(sandboxId), fromHex(v.pubkey!), fromHex(n));
    // The fake agent patches a real quote (as dstack's simulator does): Intel's signature no longer
    // holds, so the operator's hint is unverified — a real CVM's quote would verify.
    expect(v.verification.verdict).toBe('unverified');

    // Attack: the operator swaps in its own key beside the genuine quote → binding fails.
    const evil = fromHex(randomBytes(32).toString('hex'));
    expect(() => checkBinding(quoteReportData(v.evidence!), contextFor(sandboxId), evil, fromHex(n))).toThrow(
      /does not commit/,
    );
    // Attack: the operator replays an older answer to a fresh nonce → binding fails.
    expect(() =>
      checkBinding(
        quoteReportData(v.evidence!),
        contextFor(sandboxId),
        fromHex(v.pubkey!),
        fromHex(nonceHex()),
      ),
    ).toThrow(/does not commit/);
    // Attack: evidence of this CVM offered as another sandbox's (another context) → binding fails.
    expect(() =>
      checkBinding(
        quoteReportData(v.evidence!),
        contextFor(`sbx-${'b'.repeat(32)}`),
        fromHex(v.pubkey!),
        fromHex(n),
      ),
    ).toThrow(/does not commit/);
  });

  it('relays the owner channel blind: sealed secrets opened in the CVM only; the operator route refuses them', async () => {
    const v = (await service.publicKey(sandboxId, nonceHex())) as unknown as { pubkey: string };
    const body = sealSecrets(fromHex(v.pubkey), contextFor(sandboxId), sandboxId, {
      API_KEY: 'sealed-value-42',
    });
    // A sealed body handed to the operator is refused: it could as well be the operator's own.
    await expect(service.sealedSecrets(sandboxId, body)).rejects.toThrow(/owner channel/);
    const wire: Uint8Array[] = [];
    const client = new ChannelClient({
      pubkey: fromHex(v.pubkey),
      ctx: contextFor(sandboxId),
      address: owner.address,
      signMessage: (message) => owner.signMessage({ message }),
      relay: async (m) => {
        wire.push(m);
        const r = await service.channel(sandboxId, m);
        const bytes = new Uint8Array(await r.arrayBuffer());
        wire.push(bytes);
        return new Response(bytes, { status: r.status });
      },
    });
    expect((await client.json('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: true,
      secrets_count: 1,
    });
    expect((await phala.inCvm('echo "$API_KEY"', owner)).stdout.trim()).toBe('sealed-value-42');
    const r = await client.json('POST', '/terminals/commands', { command: 'echo "$API_KEY"' });
    expect((r.json as { result: { stdout: string } }).result.stdout.trim()).toBe('sealed-value-42');
    expect(Buffer.concat(wire).toString('latin1')).not.toContain('sealed-value-42');
    expect(JSON.stringify(calls())).not.toContain('sealed-value-42');
    expect((await client.json('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: false,
      secrets_count: 0,
    });
    const other = `sbx-${'c'.repeat(32)}`;
    const forOther = sealSecrets(fromHex(v.pubkey), contextFor(other), other, { A: 'b' });
    expect((await client.json('POST', '/tee/sealed-secrets', forOther)).json).toEqual({
      success: false,
      secrets_count: 0,
    });
  });

  it('makes the v1 on-chain document over the on-chain nonce from the CVM’s quote, then destroys the CVM', async () => {
    const nonce = onChainNonce(31337, 9, operator);
    const { json } = await service.onChainDocument(sandboxId, nonce);
    const doc = parseAttestationDoc(json);
    expect(doc).toMatchObject({ v: 1, tee: 'tdx', binding: { ctx: contextFor(sandboxId) } });
    checkBinding(quoteReportData(doc.evidence), doc.binding.ctx, fromHex(doc.binding.pubkey), nonce);
    await backend.destroy(sandboxId);
    expect(calls().at(-1)).toMatchObject({ method: 'DELETE', url: `/api/v1/cvms/${phala.cvm()!.id}` });
    await expect(service.attestation(sandboxId, nonceHex())).rejects.toThrow(/no Phala CVM/);
  });

  it('refuses to open without its settings, naming what to set', async () => {
    const base = { backend: 'phala', tsmRoot: '/x', pccsUrl: 'http://127.0.0.1:1', testMode: false };
    await expect(openTeeBackend(base)).rejects.toThrow(/PHALA_API_KEY/);
    await expect(openTeeBackend({ ...base, phala: { apiKey: 'k' } })).rejects.toThrow(/PHALA_SANDBOX_IMAGE/);
    await expect(
      openTeeBackend({ ...base, phala: { apiKey: 'k', image: 'sandbox:latest' } }),
    ).rejects.toThrow(/pinned by digest/);
  });
});
