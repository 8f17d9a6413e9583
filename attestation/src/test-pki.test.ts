// The test SEV PKI is accepted only with its own anchors, and then through the same verifier as
// AMD's; debug and VMPL policy are enforced on its reports.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSevTestPki, signSnpReport } from '../testing/index.ts';
import { productionAnchors } from './anchors.ts';
import { toHex } from './bytes.ts';
import { verifySnpReport } from './sev.ts';

describe('test SEV-SNP PKI', async () => {
  const pki = await createSevTestPki();
  const anchors = { ark: pki.arkPem, ask: pki.askPem };
  const rd = new Uint8Array(randomBytes(64));
  it('signs reports the SNP verifier accepts under the test anchors', () => {
    const f = verifySnpReport(signSnpReport({ reportData: rd }, pki.vcekKey), pki.vcekDer, {
      nowMs: Date.now(),
      anchors,
    });
    expect(toHex(f.reportData)).toBe(toHex(rd));
  });
  it('is refused under the production AMD anchors', () => {
    expect(() =>
      verifySnpReport(signSnpReport({ reportData: rd }, pki.vcekKey), pki.vcekDer, {
        nowMs: Date.now(),
        anchors: productionAnchors().sev,
      }),
    ).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
  });
  it('refuses a debug-mode guest and a report from VMPL 1', () => {
    const run = (r: Uint8Array) => () => verifySnpReport(r, pki.vcekDer, { nowMs: Date.now(), anchors });
    expect(run(signSnpReport({ reportData: rd, policy: 0x30000n | (1n << 19n) }, pki.vcekKey))).toThrow(
      /debug/,
    );
    expect(run(signSnpReport({ reportData: rd, vmpl: 1 }, pki.vcekKey))).toThrow(/VMPL 1/);
  });
});
