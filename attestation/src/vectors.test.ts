// The real public vectors of testdata/ (sources in its README) at their pinned times: each gives
// its expected result, and fails with one byte flipped or outside its validity window.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toHex } from './bytes.ts';
import { verifyNitroDocument } from './nitro.ts';
import { verifySnpReport } from './sev.ts';
import { verifyTdxQuote } from './tdx.ts';
import { verifyEvidence } from './verify.ts';

const td = (p: string) => new URL(`../testdata/${p}`, import.meta.url);
const bin = (p: string) => new Uint8Array(readFileSync(td(p)));
const text = (p: string) => readFileSync(td(p), 'utf8');
const expected = JSON.parse(text('expected.json'));
const flip = (b: Uint8Array, at: number) => {
  const c = b.slice();
  c[at]! ^= 0x01;
  return c;
};
const UP = ['UpToDate'];

describe('TDX (dcap-qvl)', () => {
  const e = expected.tdx_up_to_date;
  const quote = bin(e.quote);
  const coll = JSON.parse(text(e.collateral));
  const at = (nowSecs: number, q = quote, c = coll) =>
    verifyTdxQuote(q, c, { nowSecs, acceptedTcbStatuses: UP });

  it('verifies the UpToDate quote at its pinned time, with the expected measurements', () => {
    const f = at(e.now_unix);
    expect(f.tcbStatus).toBe('UpToDate');
    expect(f.measurements).toEqual({
      mrtd: e.mr_td,
      rtmr0: e.rtmr0,
      rtmr1: e.rtmr1,
      rtmr2: e.rtmr2,
      rtmr3: e.rtmr3,
    });
    expect(toHex(f.reportData)).toBe(e.report_data);
  });
  it('verifies at the edges of the collateral window and fails one second outside, on both sides', () => {
    // Measured with dcap-qvl 0.3.9: the window ends at tcb_info nextUpdate 2025-07-19T10:16:03Z (the
    // README's 10:00:35Z is a CRL nextUpdate, which dcap-qvl does not enforce) and starts at the QE
    // identity issueDate 2025-06-19T10:32:27Z.
    const first = Date.parse('2025-06-19T10:32:27Z') / 1000;
    const last = Date.parse('2025-07-19T10:16:03Z') / 1000;
    expect(at(first).tcbStatus).toBe('UpToDate');
    expect(at(last).tcbStatus).toBe('UpToDate');
    expect(() => at(last + 1)).toThrow(expect.objectContaining({ code: 'EXPIRED' }));
    expect(() => at(first - 1)).toThrow(expect.objectContaining({ code: 'EXPIRED' }));
    expect(() => at(1752969600)).toThrow(/TCBInfo expired/);
    expect(() => at(1748736000)).toThrow(/issue date is in the future/);
  });
  it('fails with one byte of report_data, the signature or the collateral flipped', () => {
    expect(() => at(e.now_unix, flip(quote, 600))).toThrow(/signature is invalid/);
    expect(() => at(e.now_unix, flip(quote, 640))).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
    // the quote signature sits right after the 48-byte header, 584-byte body and 4-byte length
    expect(() => at(e.now_unix, flip(quote, 48 + 584 + 4 + 10))).toThrow();
    const sig = coll.tcb_info_signature as string;
    const bad = { ...coll, tcb_info_signature: (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1) };
    expect(() => at(e.now_unix, quote, bad)).toThrow();
    const tcb = { ...coll, tcb_info: (coll.tcb_info as string).replace('"UpToDate"', '"UpToDatf"') };
    expect(() => at(e.now_unix, quote, tcb)).toThrow();
  });
  it('refuses a status outside the accepted list', () => {
    expect(() =>
      verifyTdxQuote(quote, coll, { nowSecs: e.now_unix, acceptedTcbStatuses: ['OutOfDate'] }),
    ).toThrow(expect.objectContaining({ code: 'POLICY' }));
  });
  it('throws "No matching TCB level found" for the outdated quote', () => {
    const n = expected.tdx_no_matching_tcb_level;
    expect(() => at(n.now_unix, bin(n.quote), JSON.parse(text(n.collateral)))).toThrow(
      /No matching TCB level found/,
    );
  });
  it('refuses an SGX quote offered as TDX, whatever statuses are accepted', () => {
    const s = expected.sgx_not_up_to_date;
    expect(() =>
      verifyTdxQuote(bin(s.quote), JSON.parse(text(s.collateral)), {
        nowSecs: s.now_unix,
        acceptedTcbStatuses: ['UpToDate', s.expect.status],
      }),
    ).toThrow(/sgx quote, not TDX/);
  });
  it('refuses a TDX quote without collateral', () => {
    expect(() => verifyEvidence('tdx', quote, undefined, { nowMs: e.now_unix * 1000 })).toThrow(/collateral/);
  });
});

describe('SEV-SNP (node:crypto)', () => {
  const anchors = { ark: text('sev/amd_milan_ark.pem'), ask: text('sev/amd_milan_ask.pem') };
  const cases = [
    {
      name: 'virtee',
      e: expected.sev_snp_virtee_milan,
      report: Buffer.from(text('sev/virtee_report_milan.hex').trim(), 'hex'),
      vcek: bin('sev/virtee_vcek_milan.der'),
      now: Date.parse('2025-01-01T00:00:00Z'),
    },
    {
      name: 'dstack',
      e: expected.sev_snp_dstack_milan,
      report: Buffer.from(bin('sev/dstack_sev_report.bin')),
      vcek: text('sev/dstack_sev_vcek.pem'),
      now: Date.parse('2027-01-01T00:00:00Z'),
    },
  ];
  for (const c of cases) {
    const report = new Uint8Array(c.report);
    const run = (r = report, nowMs = c.now, vcek: Uint8Array | string = c.vcek) =>
      verifySnpReport(r, vcek, { nowMs, anchors });
    it(`${c.name}: verifies with the expected measurement and report_data`, () => {
      const f = run();
      expect(f.measurements['measurement']).toBe(c.e.measurement);
      expect(toHex(f.reportData)).toBe(c.e.report_data);
      if (c.e.host_data) expect(f.measurements['host_data']).toBe(c.e.host_data);
    });
    it(`${c.name}: fails with report_data, measurement or signature flipped`, () => {
      expect(() => run(flip(report, 0x50))).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
      expect(() => run(flip(report, 0x90))).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
      expect(() => run(flip(report, 0x2a0))).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
    });
    it(`${c.name}: fails with a flipped VCEK byte, and outside the VCEK window`, () => {
      const der =
        typeof c.vcek === 'string'
          ? new Uint8Array(
              Buffer.from(
                c.vcek
                  .split('\n')
                  .filter((l) => !l.startsWith('-----'))
                  .join(''),
                'base64',
              ),
            )
          : c.vcek;
      expect(() => run(report, c.now, flip(der, der.length - 20))).toThrow();
      expect(() => run(report, Date.parse('2022-01-01T00:00:00Z'))).toThrow(
        expect.objectContaining({ code: 'EXPIRED' }),
      );
      expect(() => run(report, Date.parse('2040-01-01T00:00:00Z'))).toThrow(
        expect.objectContaining({ code: 'EXPIRED' }),
      );
    });
  }
  it('refuses a VCEK under another ASK (the ARK given as ASK)', () => {
    const c = cases[0]!;
    expect(() =>
      verifySnpReport(new Uint8Array(c.report), c.vcek, {
        nowMs: c.now,
        anchors: { ark: anchors.ark, ask: anchors.ark },
      }),
    ).toThrow(expect.objectContaining({ code: 'SIGNATURE' }));
  });
});

describe('Nitro (node:crypto, cborg)', () => {
  const e = expected.nitro;
  const cose = bin(e.cose_sign1);
  const root = text(e.root);
  it('verifies at the document time with the expected PCRs and user_data', () => {
    const f = verifyNitroDocument(cose, { nowMs: e.now_ms, root });
    expect(f.measurements).toEqual({ pcr0: e.pcr0, pcr1: e.pcr1, pcr2: e.pcr2 });
    expect(toHex(f.reportData)).toBe(e.user_data);
  });
  it('fails at the wall clock (the leaf lived three hours) and before the leaf was issued', () => {
    expect(() => verifyNitroDocument(cose, { nowMs: Date.parse(e.leaf_valid[1]) + 1000, root })).toThrow(
      expect.objectContaining({ code: 'EXPIRED' }),
    );
    expect(() => verifyNitroDocument(cose, { nowMs: Date.parse(e.leaf_valid[0]) - 1000, root })).toThrow(
      expect.objectContaining({ code: 'EXPIRED' }),
    );
  });
  it('fails with a flipped signature or payload byte, or another root', () => {
    expect(() => verifyNitroDocument(flip(cose, cose.length - 5), { nowMs: e.now_ms, root })).toThrow();
    // a byte inside the PCR values of the payload
    const at = Buffer.from(cose).indexOf(Buffer.from(e.pcr0.slice(0, 16), 'hex'));
    expect(at).toBeGreaterThan(0);
    expect(() => verifyNitroDocument(flip(cose, at), { nowMs: e.now_ms, root })).toThrow(
      expect.objectContaining({ code: 'SIGNATURE' }),
    );
    expect(() => verifyNitroDocument(cose, { nowMs: e.now_ms, root: text('sev/amd_milan_ark.pem') })).toThrow(
      /pinned AWS Nitro root/,
    );
  });
});
