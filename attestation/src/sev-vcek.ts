// What an SEV-SNP VCEK certificate says about the chip and firmware it was issued for (AMD's
// extensions: the TCB's SPL OIDs 1.3.6.1.4.1.3704.1.3.x and the chip's hwID 1.3.6.1.4.1.3704.1.4),
// and the check that a report's REPORTED_TCB and CHIP_ID are the certificate's. The firmware
// signs with the VCEK derived from REPORTED_TCB, so the right VCEK always matches; one issued for
// older (maybe compromised) firmware signing a report that claims newer firmware does not. No node
// built-ins: shared by sev.ts and sev-web.ts.
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it loaded first
import * as x509 from '@peculiar/x509';
import { toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import type { SevMinTcb, SnpReport } from './sev-report.ts';

export const VCEK_SPL_OIDS = {
  bootloader: '1.3.6.1.4.1.3704.1.3.1',
  tee: '1.3.6.1.4.1.3704.1.3.2',
  snp: '1.3.6.1.4.1.3704.1.3.3',
  microcode: '1.3.6.1.4.1.3704.1.3.8',
} as const;
export const HWID_OID = '1.3.6.1.4.1.3704.1.4';

export interface VcekFacts {
  tcb: SevMinTcb;
  hwId: Uint8Array;
}

/** A DER INTEGER (tag 2, short length) of at most 4 bytes, as AMD encodes each SPL. */
function derSmallInt(v: Uint8Array, what: string): number {
  if (v[0] !== 0x02 || v[1] === undefined || v[1] < 1 || v[1] > 4 || v.length !== 2 + v[1]) {
    throw new AttestationError('BAD_INPUT', `the VCEK's ${what} extension is not a small DER INTEGER`);
  }
  return v.subarray(2).reduce((n, b) => n * 256 + b, 0);
}

/** The TCB and hwID a VCEK was issued for; refused when it carries no such extensions (not a VCEK). */
export function vcekFacts(der: Uint8Array | string): VcekFacts {
  let c: x509.X509Certificate;
  try {
    c = new x509.X509Certificate(typeof der === 'string' ? der.trim() : new Uint8Array(der));
  } catch (e) {
    throw new AttestationError('BAD_INPUT', 'VCEK is not an X.509 certificate', { cause: e });
  }
  const ext = (oid: string, what: string): Uint8Array => {
    const e = c.getExtension(oid);
    if (!e) {
      throw new AttestationError(
        'BAD_INPUT',
        `the VCEK has no ${what} extension (${oid}): not a VCEK from AMD's KDS, so the TCB it was issued for is unknown`,
      );
    }
    return new Uint8Array(e.value);
  };
  const tcb = {} as SevMinTcb;
  for (const k of Object.keys(VCEK_SPL_OIDS) as (keyof SevMinTcb)[]) {
    tcb[k] = derSmallInt(ext(VCEK_SPL_OIDS[k], `${k} SPL`), `${k} SPL`);
  }
  let hwId = ext(HWID_OID, 'hwID');
  // AMD puts the 64 raw bytes in the extension; accept them wrapped in an OCTET STRING too.
  if (hwId.length === 66 && hwId[0] === 0x04 && hwId[1] === 64) hwId = hwId.subarray(2);
  if (hwId.length !== 64) throw new AttestationError('BAD_INPUT', "the VCEK's hwID is not 64 bytes");
  return { tcb, hwId };
}

/**
 * Refuses a report whose REPORTED_TCB differs from the VCEK's TCB, or whose CHIP_ID (unless the
 * host masked it to zeros: the VCEK, unique to the chip, still binds it) differs from its hwID.
 */
export function checkReportAgainstVcek(r: SnpReport, v: VcekFacts): void {
  for (const k of Object.keys(VCEK_SPL_OIDS) as (keyof SevMinTcb)[]) {
    if (r.reportedTcb[k] !== v.tcb[k]) {
      throw new AttestationError(
        'POLICY',
        `the report claims TCB ${k} ${r.reportedTcb[k]} but its VCEK was issued for ${k} ${v.tcb[k]}: a VCEK of other firmware signed it, refused`,
      );
    }
  }
  if (r.chipId.some((b) => b !== 0) && toHex(r.chipId) !== toHex(v.hwId)) {
    throw new AttestationError(
      'POLICY',
      "the report's CHIP_ID is not the chip its VCEK was issued for, refused",
    );
  }
}
