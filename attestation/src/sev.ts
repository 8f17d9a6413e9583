// AMD SEV-SNP: the 1184-byte attestation report, signed (ECDSA P-384/SHA-384) by the VCEK, whose
// chain ARK → ASK → VCEK is checked with node:crypto against anchors given by the caller. Policy:
// version ≥ 2, debug off, VMPL 0, the report's TCB and chip id those the VCEK was issued for
// (sev-vcek.ts), an optional minimum TCB. Also the auxblob cert table.
import { verify as cryptoVerify, X509Certificate } from 'node:crypto';
import { toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import {
  parseSnpReport,
  type SevOptions,
  SNP_SIGNED_LEN,
  snpPolicyFacts,
  snpSignatureP1363,
} from './sev-report.ts';
import { vcekFacts } from './sev-vcek.ts';
import type { EvidenceFacts } from './types.ts';

export {
  parseSnpReport,
  type SevAnchors,
  type SevMinTcb,
  type SevOptions,
  SNP_REPORT_SIZE,
  type SnpReport,
} from './sev-report.ts';

const cert = (c: string | Uint8Array, what: string): X509Certificate => {
  try {
    return new X509Certificate(typeof c === 'string' ? c : Buffer.from(c));
  } catch (e) {
    throw new AttestationError('BAD_INPUT', `${what} is not an X.509 certificate`, { cause: e });
  }
};

function validAt(c: X509Certificate, nowMs: number, what: string): void {
  if (nowMs < Date.parse(c.validFrom) || nowMs > Date.parse(c.validTo)) {
    throw new AttestationError('EXPIRED', `${what} is not valid at ${new Date(nowMs).toISOString()}`);
  }
}

export function verifySnpReport(
  report: Uint8Array,
  vcekDer: Uint8Array | string,
  o: SevOptions,
): EvidenceFacts {
  const r = parseSnpReport(report);
  const ark = cert(o.anchors.ark, 'ARK');
  const ask = cert(o.anchors.ask, 'ASK');
  const vcek = cert(vcekDer, 'VCEK');
  if (!ark.verify(ark.publicKey)) throw new AttestationError('SIGNATURE', 'the ARK is not self-signed');
  if (!ask.verify(ark.publicKey)) throw new AttestationError('SIGNATURE', 'the ASK is not signed by the ARK');
  if (!vcek.verify(ask.publicKey)) {
    throw new AttestationError('SIGNATURE', 'the VCEK is not signed by the trusted ASK');
  }
  validAt(ark, o.nowMs, 'ARK');
  validAt(ask, o.nowMs, 'ASK');
  validAt(vcek, o.nowMs, 'VCEK');
  const ok = cryptoVerify(
    'sha384',
    report.subarray(0, SNP_SIGNED_LEN),
    { key: vcek.publicKey, dsaEncoding: 'ieee-p1363' },
    snpSignatureP1363(report),
  );
  if (!ok) throw new AttestationError('SIGNATURE', 'the SNP report signature does not verify under the VCEK');
  return snpPolicyFacts(r, vcekFacts(vcekDer), o.minTcb);
}

// GUIDs of the GHCB cert table, as the 16 bytes appear in the table (both encodings accepted).
const VCEK_GUID = '63da758d-e664-4564-adc5-f4b93be8accd';
function guidForms(g: string): string[] {
  const be = g.replace(/-/g, '');
  const b = Buffer.from(be, 'hex');
  const le = Buffer.concat([
    Buffer.from(b.subarray(0, 4)).reverse(),
    Buffer.from(b.subarray(4, 6)).reverse(),
    Buffer.from(b.subarray(6, 8)).reverse(),
    b.subarray(8),
  ]).toString('hex');
  return [be, le];
}

/** The VCEK from a configfs-tsm SEV auxblob (GHCB cert table: {guid, offset u32, length u32}…, zero entry). */
export function vcekFromCertTable(aux: Uint8Array): Uint8Array {
  const forms = guidForms(VCEK_GUID);
  const v = new DataView(aux.buffer, aux.byteOffset, aux.byteLength);
  for (let o = 0; o + 24 <= aux.length; o += 24) {
    const guid = toHex(aux.subarray(o, o + 16));
    if (/^0+$/.test(guid)) break;
    if (forms.includes(guid)) {
      const off = v.getUint32(o + 16, true);
      const len = v.getUint32(o + 20, true);
      if (off + len > aux.length) throw new AttestationError('BAD_INPUT', 'auxblob VCEK entry out of bounds');
      return aux.slice(off, off + len);
    }
  }
  throw new AttestationError(
    'BAD_INPUT',
    'the auxblob has no VCEK entry (is the host serving certificates?)',
  );
}

/** Build a cert table holding only a VCEK (used by test firmware; same layout as the host's). */
export function certTableWithVcek(vcekDer: Uint8Array): Uint8Array {
  const head = 48; // one entry + the zero terminator
  const out = new Uint8Array(head + vcekDer.length);
  out.set(Buffer.from(guidForms(VCEK_GUID)[0]!, 'hex'), 0);
  const v = new DataView(out.buffer);
  v.setUint32(16, head, true);
  v.setUint32(20, vcekDer.length, true);
  out.set(vcekDer, head);
  return out;
}
