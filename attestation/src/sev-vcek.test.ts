// Security (malicious host, TCB rollback): a VCEK issued for old, compromised firmware signs a
// report claiming newer firmware. The verifiers (node and WebCrypto) read the TCB and hwID the
// VCEK was issued for and refuse a report whose REPORTED_TCB or CHIP_ID differ; the minimum TCB
// is applied to the VCEK's TCB. Real AMD evidence keeps verifying at its pinned times.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseSnpReport, verifySnpReport } from './sev.ts';
import { vcekFacts } from './sev-vcek.ts';
import { verifySnpReportWeb } from './sev-web.ts';
import { createSevTestPki, signSnpReport, TEST_CHIP_ID, TEST_TCB } from './testing/sev-test-pki.ts';

const td = (p: string) => new URL(`../testdata/${p}`, import.meta.url);
const text = (p: string) => readFileSync(td(p), 'utf8');
const milan = { ark: text('sev/amd_milan_ark.pem'), ask: text('sev/amd_milan_ask.pem') };

describe('real AMD evidence: the VCEK was issued for exactly the TCB and chip the report names', () => {
  const cases = [
    {
      name: 'virtee',
      report: new Uint8Array(Buffer.from(text('sev/virtee_report_milan.hex').trim(), 'hex')),
      vcek: new Uint8Array(readFileSync(td('sev/virtee_vcek_milan.der'))),
      nowMs: Date.parse('2025-01-01T00:00:00Z'),
      tcb: { bootloader: 3, tee: 0, snp: 8, microcode: 115 },
    },
    {
      name: 'dstack',
      report: new Uint8Array(readFileSync(td('sev/dstack_sev_report.bin'))),
      vcek: text('sev/dstack_sev_vcek.pem') as string | Uint8Array,
      nowMs: Date.parse('2027-01-01T00:00:00Z'),
      tcb: { bootloader: 4, tee: 0, snp: 23, microcode: 213 },
    },
  ];
  for (const c of cases) {
    it(`${c.name}: TCB ${JSON.stringify(c.tcb)}; a minimum at it passes, one above it is refused naming the VCEK's TCB`, async () => {
      const v = vcekFacts(c.vcek);
      const r = parseSnpReport(c.report);
      expect(v.tcb).toEqual(c.tcb);
      expect(r.reportedTcb).toEqual(c.tcb);
      expect(Buffer.from(v.hwId).equals(Buffer.from(r.chipId))).toBe(true);
      const o = { nowMs: c.nowMs, anchors: milan };
      expect(() => verifySnpReport(c.report, c.vcek, { ...o, minTcb: c.tcb })).not.toThrow();
      await expect(verifySnpReportWeb(c.report, c.vcek, { ...o, minTcb: c.tcb })).resolves.toBeDefined();
      const above = { ...c.tcb, microcode: c.tcb.microcode + 1 };
      expect(() => verifySnpReport(c.report, c.vcek, { ...o, minTcb: above })).toThrow(
        `the VCEK's TCB microcode ${c.tcb.microcode} is below the minimum ${c.tcb.microcode + 1}`,
      );
    });
  }
});

describe('malicious host: a VCEK of older firmware signs a report claiming newer firmware', async () => {
  const old = { bootloader: 2, tee: 0, snp: 6, microcode: 100 };
  const oldPki = await createSevTestPki(Date.now(), { tcb: old });
  const anchors = { ark: oldPki.arkPem, ask: oldPki.askPem };
  const o = { nowMs: Date.now(), anchors, minTcb: TEST_TCB };
  const rd = new Uint8Array(randomBytes(64));

  it('a report claiming the minimum TCB, signed by a VCEK issued below it, is refused (node and web)', async () => {
    const claim = signSnpReport({ reportData: rd, reportedTcb: TEST_TCB }, oldPki.vcekKey);
    const why = /claims TCB bootloader 3 but its VCEK was issued for bootloader 2/;
    expect(() => verifySnpReport(claim, oldPki.vcekDer, o)).toThrow(why);
    await expect(verifySnpReportWeb(claim, oldPki.vcekDer, o)).rejects.toThrow(why);
    expect(() => verifySnpReport(claim, oldPki.vcekDer, o)).toThrow(
      expect.objectContaining({ code: 'POLICY' }),
    );
  });

  it("an honest report of the old firmware verifies without a minimum and is refused by it, on the VCEK's TCB", async () => {
    const honest = signSnpReport({ reportData: rd, reportedTcb: old }, oldPki.vcekKey);
    expect(() => verifySnpReport(honest, oldPki.vcekDer, { ...o, minTcb: undefined })).not.toThrow();
    expect(() => verifySnpReport(honest, oldPki.vcekDer, o)).toThrow(
      "the VCEK's TCB bootloader 2 is below the minimum 3",
    );
    await expect(verifySnpReportWeb(honest, oldPki.vcekDer, o)).rejects.toThrow(/below the minimum/);
  });

  it("a report naming another chip than the VCEK's hwID is refused; a masked (zero) CHIP_ID is not", async () => {
    const pki = await createSevTestPki();
    const po = { nowMs: Date.now(), anchors: { ark: pki.arkPem, ask: pki.askPem } };
    const other = signSnpReport({ reportData: rd, chipId: new Uint8Array(64).fill(0x42) }, pki.vcekKey);
    expect(() => verifySnpReport(other, pki.vcekDer, po)).toThrow(/CHIP_ID is not the chip its VCEK/);
    await expect(verifySnpReportWeb(other, pki.vcekDer, po)).rejects.toThrow(/CHIP_ID/);
    const masked = signSnpReport({ reportData: rd, chipId: new Uint8Array(64) }, pki.vcekKey);
    expect(() => verifySnpReport(masked, pki.vcekDer, po)).not.toThrow();
    expect(Buffer.from(vcekFacts(pki.vcekDer).hwId).equals(Buffer.from(TEST_CHIP_ID))).toBe(true);
  });

  it('a signing certificate without the VCEK extensions is refused (the TCB it stands for is unknown)', () => {
    // The ASK as "VCEK": a real certificate with none of AMD's VCEK extensions.
    expect(() => vcekFacts(oldPki.askPem)).toThrow(
      /no bootloader SPL extension \(1\.3\.6\.1\.4\.1\.3704\.1\.3\.1\)/,
    );
  });
});
