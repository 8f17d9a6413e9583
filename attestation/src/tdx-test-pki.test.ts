// The test TDX PKI's quotes verify only under its own root, through the same dcap-qvl verifier as
// Intel's, with the collateral its fake PCCS serves over dcap-qvl's own getCollateral.
import { randomBytes } from 'node:crypto';
import { getCollateral } from '@phala/dcap-qvl';
import { afterAll, describe, expect, it } from 'vitest';
import { toHex } from './bytes.ts';
import { verifyTdxQuote } from './tdx.ts';
import { createTdxTestPki, signTdxQuote, startFakePccs } from './testing/tdx-test-pki.ts';

describe('test TDX PKI', async () => {
  const pki = await createTdxTestPki();
  const pccs = await startFakePccs(pki);
  afterAll(() => pccs.close());
  const rd = new Uint8Array(randomBytes(64));
  const opts = { nowSecs: Math.floor(Date.now() / 1000), acceptedTcbStatuses: ['UpToDate'] };
  it('signs quotes over any report_data that verify under the test root with the PCCS collateral', async () => {
    const quote = signTdxQuote(pki, rd);
    const collateral = await getCollateral(pccs.url, Buffer.from(quote));
    const f = verifyTdxQuote(quote, collateral, { ...opts, intelRootDer: pki.rootDer });
    expect(toHex(f.reportData)).toBe(toHex(rd));
    expect(f.tcbStatus).toBe('UpToDate');
  });
  it("is refused under Intel's production root, and a flipped report_data byte breaks the signature", () => {
    const quote = signTdxQuote(pki, rd);
    expect(() => verifyTdxQuote(quote, pki.collateral, opts)).toThrow(
      expect.objectContaining({ code: 'SIGNATURE' }),
    );
    const bad = quote.slice();
    bad[48 + 520]! ^= 1;
    expect(() => verifyTdxQuote(bad, pki.collateral, { ...opts, intelRootDer: pki.rootDer })).toThrow(
      /signature is invalid/i,
    );
  });
});
