// The test SEV PKI is accepted only with its own anchors, and then through the same verifier as
// AMD's; debug and VMPL policy are enforced on its reports.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { productionAnchors } from './anchors.ts';
import { toHex } from './bytes.ts';
import { verifySnpReport } from './sev.ts';
import { createSevTestPki, signSnpReport } from './testing/sev-test-pki.ts';

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
  it('enforces a minimum reported TCB when one is given (the report says bootloader 3, snp 8, microcode 115)', () => {
    const r = signSnpReport({ reportData: rd }, pki.vcekKey);
    const at = (minTcb: { bootloader: number; tee: number; snp: number; microcode: number }) => () =>
      verifySnpReport(r, pki.vcekDer, { nowMs: Date.now(), anchors, minTcb });
    expect(at({ bootloader: 3, tee: 0, snp: 8, microcode: 115 })).not.toThrow();
    expect(at({ bootloader: 3, tee: 0, snp: 9, microcode: 115 })).toThrow(/snp 8 is below the minimum 9/);
    expect(at({ bootloader: 3, tee: 0, snp: 8, microcode: 200 })).toThrow(/microcode/);
  });
});
