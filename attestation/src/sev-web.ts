// AMD SEV-SNP on WebCrypto, for browsers: the ARK → ASK → VCEK chain (RSA-PSS/SHA-384 for AMD's
// certificates, ECDSA P-384 for test PKIs) with @peculiar/x509, then the report's ECDSA
// P-384/SHA-384 signature under the VCEK and the same policy as sev.ts. Anchors come from the caller.
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it loaded first
import * as x509 from '@peculiar/x509';
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

type Subtle = typeof globalThis.crypto.subtle;
const subtle = (): Subtle => {
  const s = globalThis.crypto?.subtle;
  if (!s)
    throw new AttestationError(
      'BAD_INPUT',
      'WebCrypto is unavailable (open the page over https or localhost)',
    );
  return s;
};

function cert(c: string | Uint8Array, what: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(typeof c === 'string' ? c.trim() : new Uint8Array(c));
  } catch (e) {
    throw new AttestationError('BAD_INPUT', `${what} is not an X.509 certificate`, { cause: e });
  }
}

async function signedBy(c: x509.X509Certificate, issuer: x509.X509Certificate): Promise<boolean> {
  subtle(); // throws the clear "no WebCrypto" error, not a false "not signed"
  try {
    return await c.verify({ publicKey: issuer, signatureOnly: true }, globalThis.crypto as never);
  } catch {
    return false;
  }
}

function validAt(c: x509.X509Certificate, nowMs: number, what: string): void {
  if (nowMs < c.notBefore.getTime() || nowMs > c.notAfter.getTime()) {
    throw new AttestationError('EXPIRED', `${what} is not valid at ${new Date(nowMs).toISOString()}`);
  }
}

/** verifySnpReport of sev.ts, asynchronously on WebCrypto (same checks, same errors). */
export async function verifySnpReportWeb(
  report: Uint8Array,
  vcekDer: Uint8Array | string,
  o: SevOptions,
): Promise<EvidenceFacts> {
  const r = parseSnpReport(report);
  const ark = cert(o.anchors.ark, 'ARK');
  const ask = cert(o.anchors.ask, 'ASK');
  const vcek = cert(vcekDer, 'VCEK');
  if (!(await signedBy(ark, ark))) throw new AttestationError('SIGNATURE', 'the ARK is not self-signed');
  if (!(await signedBy(ask, ark)))
    throw new AttestationError('SIGNATURE', 'the ASK is not signed by the ARK');
  if (!(await signedBy(vcek, ask))) {
    throw new AttestationError('SIGNATURE', 'the VCEK is not signed by the trusted ASK');
  }
  validAt(ark, o.nowMs, 'ARK');
  validAt(ask, o.nowMs, 'ASK');
  validAt(vcek, o.nowMs, 'VCEK');
  const alg = { name: 'ECDSA', namedCurve: 'P-384' } as const;
  let key: Awaited<ReturnType<Subtle['importKey']>>;
  try {
    key = await subtle().importKey('spki', new Uint8Array(vcek.publicKey.rawData), alg, false, ['verify']);
  } catch (e) {
    throw new AttestationError('BAD_INPUT', 'the VCEK key is not ECDSA P-384', { cause: e });
  }
  const ok = await subtle().verify(
    { name: 'ECDSA', hash: 'SHA-384' },
    key,
    new Uint8Array(snpSignatureP1363(report)),
    new Uint8Array(report.subarray(0, SNP_SIGNED_LEN)),
  );
  if (!ok) throw new AttestationError('SIGNATURE', 'the SNP report signature does not verify under the VCEK');
  return snpPolicyFacts(r, vcekFacts(vcekDer), o.minTcb);
}
