// The browser entry (browser.ts, WebCrypto + @peculiar/x509) against the same real vectors as
// vectors.test.ts at their pinned times, and end to end (binding, allow-list) with the test SEV PKI,
// checked verdict for verdict against the node verifier. It must not import node built-ins.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AMD_MILAN_ARK_PEM,
  AMD_MILAN_ASK_PEM,
  type BoundAttestation,
  bindingReportData,
  CLI_ONLY_REASON,
  toHex,
  verifyBoundAttestationWeb,
  verifySnpReportWeb,
} from '../browser.ts';
import { createSevTestPki, signSnpReport } from './testing/sev-test-pki.ts';
import { verifyBoundAttestation } from './verify.ts';

const td = (p: string) => new URL(`../testdata/${p}`, import.meta.url);
const bin = (p: string) => new Uint8Array(readFileSync(td(p)));
const text = (p: string) => readFileSync(td(p), 'utf8');
const expected = JSON.parse(text('expected.json'));
const flip = (b: Uint8Array, at: number) => {
  const c = b.slice();
  c[at]! ^= 0x01;
  return c;
};
const milan = { ark: AMD_MILAN_ARK_PEM, ask: AMD_MILAN_ASK_PEM };

describe('browser entry', () => {
  it('bundles the AMD Milan anchors byte-identical to testdata/', () => {
    expect(AMD_MILAN_ARK_PEM.trim()).toBe(text('sev/amd_milan_ark.pem').trim());
    expect(AMD_MILAN_ASK_PEM.trim()).toBe(text('sev/amd_milan_ask.pem').trim());
  });

  it('imports no node built-in (it is bundled for the console)', () => {
    const files = [
      '../browser.ts',
      'sev-web.ts',
      'sev-report.ts',
      'verify-web.ts',
      'binding.ts',
      'bytes.ts',
      'measurements.ts',
      'errors.ts',
      'amd-milan.ts',
    ];
    for (const f of files) {
      expect(readFileSync(new URL(f, import.meta.url), 'utf8'), f).not.toMatch(/from ['"]node:|Buffer\./);
    }
  });
});

describe('SEV-SNP on WebCrypto: the real vectors at their pinned times', () => {
  const cases = [
    {
      name: 'virtee',
      e: expected.sev_snp_virtee_milan,
      report: Uint8Array.from(Buffer.from(text('sev/virtee_report_milan.hex').trim(), 'hex')),
      vcek: bin('sev/virtee_vcek_milan.der') as Uint8Array | string,
      now: Date.parse('2025-01-01T00:00:00Z'),
      before: Date.parse('2023-04-01T00:00:00Z'),
    },
    {
      name: 'dstack',
      e: expected.sev_snp_dstack_milan,
      report: bin('sev/dstack_sev_report.bin'),
      vcek: text('sev/dstack_sev_vcek.pem') as Uint8Array | string,
      now: Date.parse('2027-01-01T00:00:00Z'),
      before: Date.parse('2026-06-01T00:00:00Z'),
    },
  ];
  for (const c of cases) {
    const run = (r = c.report, nowMs = c.now, anchors = milan) =>
      verifySnpReportWeb(r, c.vcek, { nowMs, anchors });
    it(`${c.name}: verifies with the expected measurement and report_data`, async () => {
      const f = await run();
      expect(f.measurements['measurement']).toBe(c.e.measurement);
      expect(toHex(f.reportData)).toBe(c.e.report_data);
      if (c.e.host_data) expect(f.measurements['host_data']).toBe(c.e.host_data);
    });
    it(`${c.name}: refused with report_data, measurement or signature flipped`, async () => {
      for (const at of [0x50, 0x90, 0x2a0]) {
        await expect(run(flip(c.report, at))).rejects.toMatchObject({ code: 'SIGNATURE' });
      }
    });
    it(`${c.name}: refused before the VCEK's validity, and under another chain`, async () => {
      await expect(run(c.report, c.before)).rejects.toMatchObject({ code: 'EXPIRED' });
      // The ASK given as root: the chain does not close on the trusted ARK.
      await expect(run(c.report, c.now, { ark: milan.ask, ask: milan.ask })).rejects.toMatchObject({
        code: 'SIGNATURE',
      });
    });
  }
});

describe('verifyBoundAttestationWeb (test SEV PKI): the same verdicts as the node verifier', async () => {
  const pki = await createSevTestPki();
  const anchors = { ark: pki.arkPem, ask: pki.askPem };
  const ctx = '31337:1:sbx-1:0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
  const nonce = new Uint8Array(randomBytes(32));
  const pubkey = new Uint8Array(randomBytes(32));
  const measurement = new Uint8Array(48).fill(0x5a);
  const att = (n = nonce): BoundAttestation => {
    const rd = bindingReportData(ctx, pubkey, n);
    return {
      tee: 'sev',
      evidence: toHex(signSnpReport({ reportData: rd, measurement }, pki.vcekKey)),
      collateral: { vcek: toHex(pki.vcekDer) },
      report_data: toHex(rd),
      binding: { ctx, nonce: toHex(n), pubkey: toHex(pubkey) },
    };
  };
  const nowMs = Date.now();
  const allowList = [{ measurement: toHex(measurement) }];
  const both = async (a: BoundAttestation, allow = allowList, expectNonce = nonce) => {
    const o = { nowMs, expect: { ctx, nonce: expectNonce }, allowList: allow };
    const web = await verifyBoundAttestationWeb(a, { ...o, sevAnchors: anchors });
    const node = verifyBoundAttestation(a, { ...o, anchors: { sev: anchors, nitroRoot: '' } });
    expect(web.verification).toEqual(node.verification);
    return web;
  };

  it('verified: chain, signature, binding to our context + key + nonce, our measurement', async () => {
    const r = await both(att());
    expect(r.verification).toMatchObject({
      verdict: 'verified',
      report_data_matched: true,
      measurement_matched: true,
    });
    expect(toHex(r.pubkey!)).toBe(toHex(pubkey));
  });
  it('a replay over another nonce is refused at the binding', async () => {
    const r = await both(att(new Uint8Array(32).fill(1)));
    expect(r.verification).toMatchObject({
      verdict: 'unverified',
      signature_verified: true,
      report_data_matched: false,
    });
    expect(r.verification.reason).toMatch(/does not commit to this context/);
  });
  it('report_data claimed beside the evidence must be the signed one', async () => {
    const r = await both({ ...att(), report_data: toHex(new Uint8Array(64)) });
    expect(r.verification.reason).toMatch(/not the signed one/);
  });
  it('a measurement not in the allow-list (or an empty list) is measurement_mismatch', async () => {
    expect((await both(att(), [{ measurement: '00'.repeat(48) }])).verification.verdict).toBe(
      'measurement_mismatch',
    );
    expect((await both(att(), [])).verification.verdict).toBe('measurement_mismatch');
  });
  it('under AMD Milan anchors the test PKI is refused', async () => {
    const r = await verifyBoundAttestationWeb(att(), {
      nowMs,
      sevAnchors: milan,
      expect: { ctx, nonce },
      allowList,
    });
    expect(r.verification).toMatchObject({ verdict: 'unverified', signature_verified: false });
  });
  it('TDX and Nitro evidence: refused with the pointer to the CLI', async () => {
    const r = await verifyBoundAttestationWeb(
      { ...att(), tee: 'tdx' },
      { nowMs, sevAnchors: anchors, expect: { ctx, nonce }, allowList },
    );
    expect(r.verification.verdict).toBe('unverified');
    expect(r.verification.reason).toContain(CLI_ONLY_REASON);
  });
});
