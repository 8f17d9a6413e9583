// The direct backend over a configfs-tsm tree in a temp dir whose test firmware signs SNP reports
// with a test PKI: reports bound to our inblob, a generation race retried, a wrong provider and a
// missing tree refused; then the TeeService end to end (binding, verify, seal, open, replay).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contextString,
  parseSnpReport,
  sealSecrets,
  toHex,
  vcekFromCertTable,
  verifyBoundAttestation,
  verifySnpReport,
} from '@agent-sandbox/attestation';
import { createSevTestPki } from '@agent-sandbox/attestation/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkTsmTree, tsmReport } from './configfs-tsm.ts';
import { DirectTeeBackend } from './direct.ts';
import { TeeService } from './service.ts';
import { FakeTsmFirmware } from './testing/fake-tsm.ts';

const pki = await createSevTestPki();
const anchors = { sev: { ark: pki.arkPem, ask: pki.askPem }, nitroRoot: pki.arkPem };
const MEASUREMENT = new Uint8Array(48).fill(0x42);
let dir: string;
let fw: FakeTsmFirmware | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsm-'));
});
afterEach(async () => {
  await fw?.stop();
  fw = undefined;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
const tree = async (name: string, extra: Partial<ConstructorParameters<typeof FakeTsmFirmware>[0]> = {}) => {
  const root = join(dir, name);
  fw = await new FakeTsmFirmware({ root, pki, measurement: MEASUREMENT, ...extra }).start();
  return root;
};

describe('configfs-tsm client', () => {
  it('gets an SNP report over exactly our inblob, with the VCEK in the auxblob', async () => {
    const root = await tree('happy');
    const inblob = new Uint8Array(randomBytes(64));
    const r = await tsmReport({ root, provider: 'sev_guest' }, inblob);
    expect(r.attempts).toBe(1);
    expect(toHex(parseSnpReport(r.outblob).reportData)).toBe(toHex(inblob));
    const f = verifySnpReport(r.outblob, vcekFromCertTable(r.auxblob!), {
      nowMs: Date.now(),
      anchors: anchors.sev,
    });
    expect(f.measurements['measurement']).toBe(toHex(MEASUREMENT));
  });
  it('retries when another writer changes generation between our reads', async () => {
    const root = await tree('race', { racedRounds: 2 });
    const inblob = new Uint8Array(randomBytes(64));
    const r = await tsmReport({ root, provider: 'sev_guest' }, inblob);
    expect(r.attempts).toBe(3);
    expect(toHex(parseSnpReport(r.outblob).reportData)).toBe(toHex(inblob));
  });
  it('gives up, saying why, when the entry never settles', async () => {
    const root = await tree('busy', { racedRounds: 100 });
    await expect(tsmReport({ root, provider: 'sev_guest', attempts: 2 }, new Uint8Array(64))).rejects.toThrow(
      /kept changing under us/,
    );
  });
  it('TDX: no privlevel or auxblob; the quote must carry our report_data at offset 568', async () => {
    const template = new Uint8Array(
      readFileSync(new URL('../../../attestation/testdata/tdx/tdx_quote.bin', import.meta.url)),
    );
    const root = await tree('tdx-quote', { provider: 'tdx_guest', tdxQuoteTemplate: template });
    const inblob = new Uint8Array(randomBytes(64));
    const r = await tsmReport({ root, provider: 'tdx_guest' }, inblob);
    expect(r.auxblob).toBeUndefined();
    expect(toHex(r.outblob.subarray(568, 632))).toBe(toHex(inblob));
    expect(r.outblob.length).toBe(template.length);
    // the direct backend hands it on; collateral is absent when no PCCS answers
    const ev = await new DirectTeeBackend({ type: 'tdx', root, pccsUrl: 'http://127.0.0.1:1' }).attest(
      inblob,
    );
    expect(ev).toMatchObject({ tee: 'tdx' });
    expect(ev.collateral).toBeUndefined();
  });
  it('concurrent attestations from one backend each get a report over their own report_data', async () => {
    const root = await tree('concurrent');
    const backend = new DirectTeeBackend({ type: 'sev', root, pccsUrl: 'http://127.0.0.1:1' });
    const blobs = Array.from({ length: 4 }, () => new Uint8Array(randomBytes(64)));
    const got = await Promise.all(blobs.map((b) => backend.attest(b)));
    expect(got.map((g) => toHex(parseSnpReport(g.evidence).reportData))).toEqual(blobs.map(toHex));
  });
  it('refuses a provider mismatch (a TDX guest configured as sev)', async () => {
    const root = await tree('tdx', { provider: 'tdx_guest' });
    await expect(checkTsmTree({ root, provider: 'sev_guest' })).rejects.toThrow(
      /provider is "tdx_guest", expected "sev_guest"/,
    );
  });
  it('refuses a missing tree, saying this is not a confidential VM', async () => {
    await expect(
      new DirectTeeBackend({ type: 'sev', root: join(dir, 'nope'), pccsUrl: 'http://127.0.0.1:1' }).check(),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/not a confidential VM/),
    });
  });
});

describe('TeeService on the direct backend (malicious-operator)', () => {
  const OP = `0x${'ab'.repeat(20)}`;
  const ctxOf = (id: string) =>
    contextString({
      chainId: 31337,
      serviceId: 7,
      sandboxId: id,
      operator: OP,
      owner: `0x${'0d'.repeat(20)}`,
    });
  const setup = async (name: string) => {
    const root = await tree(name);
    const injected: Array<[string, Record<string, string>]> = [];
    const svc = new TeeService({
      backend: new DirectTeeBackend({ type: 'sev', root, pccsUrl: 'http://127.0.0.1:1' }),
      contextFor: ctxOf,
      injectSecrets: async (id, env) => injected.push([id, env]),
      verify: {
        anchors,
        acceptedTcbStatuses: ['UpToDate'],
        allowList: [{ '*': toHex(MEASUREMENT) }],
        requirePinned: true,
      },
    });
    return { svc, injected };
  };

  it('evidence over a fresh nonce binds the sealing key; the client verifies it; the plain sealed route is refused', async () => {
    const { svc, injected } = await setup('svc');
    const nonce = new Uint8Array(randomBytes(32));
    const view = await svc.publicKey('sbx-a', toHex(nonce));
    expect(view.verification.verdict).toBe('verified');
    const client = verifyBoundAttestation(view, {
      nowMs: Date.now(),
      anchors,
      expect: { ctx: ctxOf('sbx-a'), nonce },
      allowList: [{ measurement: toHex(MEASUREMENT) }],
    });
    expect(client.verification.verdict).toBe('verified');
    // Sealed bodies open only through the owner channel (direct-channel.test.ts); the plain route
    // refuses them, since anyone may seal to the public key.
    const body = sealSecrets(client.pubkey!, ctxOf('sbx-a'), 'sbx-a', { OPENAI_API_KEY: 'sk-live' });
    await expect(svc.sealedSecrets('sbx-a', body)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(injected).toHaveLength(0);
  });

  it('a key swapped by the operator, a replayed nonce, or another context is refused by the client', async () => {
    const { svc } = await setup('svc2');
    const nonce = new Uint8Array(randomBytes(32));
    const view = await svc.attestation('sbx-a', toHex(nonce));
    const opts = { nowMs: Date.now(), anchors, allowList: [{ '*': toHex(MEASUREMENT) }] };
    const swapped = { ...view, binding: { ...view.binding, pubkey: 'ee'.repeat(32) } };
    expect(
      verifyBoundAttestation(swapped, { ...opts, expect: { ctx: ctxOf('sbx-a'), nonce } }).verification,
    ).toMatchObject({
      verdict: 'unverified',
      signature_verified: true,
      report_data_matched: false,
    });
    const fresh = new Uint8Array(randomBytes(32)); // the client's new nonce; the operator replays old evidence
    expect(
      verifyBoundAttestation(view, { ...opts, expect: { ctx: ctxOf('sbx-a'), nonce: fresh } }).verification
        .verdict,
    ).toBe('unverified');
    const other = contextString({
      chainId: 31337,
      serviceId: 8,
      sandboxId: 'sbx-a',
      operator: OP,
      owner: `0x${'0d'.repeat(20)}`,
    });
    expect(
      verifyBoundAttestation(view, { ...opts, expect: { ctx: other, nonce } }).verification.verdict,
    ).toBe('unverified');
    expect(
      verifyBoundAttestation(view, { ...opts, allowList: [], expect: { ctx: ctxOf('sbx-a'), nonce } })
        .verification.verdict,
    ).toBe('measurement_mismatch');
    // under AMD's real anchors, the test PKI's evidence is not trusted at all
    expect(
      verifyBoundAttestation(view, {
        nowMs: Date.now(),
        allowList: opts.allowList,
        expect: { ctx: ctxOf('sbx-a'), nonce },
      }).verification.signature_verified,
    ).toBe(false);
  });

  it('refuses a missing or short nonce', async () => {
    const { svc } = await setup('svc3');
    await expect(svc.attestation('sbx-a', undefined)).rejects.toMatchObject({ code: 'VALIDATION' });
    await expect(svc.attestation('sbx-a', 'ab'.repeat(16))).rejects.toMatchObject({ code: 'VALIDATION' });
  });
});
