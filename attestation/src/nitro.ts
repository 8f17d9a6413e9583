// AWS Nitro Enclaves: an NSM attestation document, a COSE_Sign1 (ES384) whose leaf certificate
// chains through `cabundle` to a pinned AWS root, checked with node:crypto at a given `now`, each
// certificate in its role (CAs issue, the leaf signs: basicConstraints, keyUsage, path length).
// Measurements: PCR0-2; report_data is `user_data` (spec tee.md §4: 64 bytes).
import { verify as cryptoVerify, X509Certificate } from 'node:crypto';
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it loaded first
import * as x509 from '@peculiar/x509';
import { decode, encode } from 'cborg';
import { bytesEqual, toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import type { EvidenceFacts } from './types.ts';

export interface NitroOptions {
  nowMs: number;
  /** The AWS Nitro Enclaves root G1 (PEM or DER). */
  root: string | Uint8Array;
}

interface NitroDoc {
  module_id: string;
  timestamp: number;
  pcrs: Map<number, Uint8Array>;
  certificate: Uint8Array;
  cabundle: Uint8Array[];
  user_data?: Uint8Array | null;
  nonce?: Uint8Array | null;
  public_key?: Uint8Array | null;
}

const tags: ((inner: unknown) => unknown)[] = [];
tags[18] = (inner) => inner; // COSE_Sign1 may arrive tagged

function cbor(bytes: Uint8Array, what: string): unknown {
  try {
    return decode(bytes, { useMaps: true, tags });
  } catch (e) {
    throw new AttestationError('BAD_INPUT', `${what} is not valid CBOR`, { cause: e });
  }
}

export function verifyNitroDocument(cose: Uint8Array, o: NitroOptions): EvidenceFacts {
  const top = cbor(cose, 'the Nitro attestation');
  if (!Array.isArray(top) || top.length !== 4)
    throw new AttestationError('BAD_INPUT', 'not a COSE_Sign1 array');
  const [prot, , payload, sig] = top as [Uint8Array, unknown, Uint8Array, Uint8Array];
  const header = cbor(prot, 'the COSE protected header') as Map<number, unknown>;
  if (!(header instanceof Map) || header.get(1) !== -35) {
    throw new AttestationError('BAD_INPUT', 'the COSE algorithm is not ES384 (-35)');
  }
  const m = cbor(payload, 'the attestation payload') as Map<string, unknown>;
  if (!(m instanceof Map)) throw new AttestationError('BAD_INPUT', 'the attestation payload is not a map');
  const doc = Object.fromEntries(m) as unknown as NitroDoc;
  if (!(doc.certificate instanceof Uint8Array) || !Array.isArray(doc.cabundle) || doc.cabundle.length === 0) {
    throw new AttestationError('BAD_INPUT', 'the attestation lacks its certificate or cabundle');
  }
  const root = new X509Certificate(typeof o.root === 'string' ? o.root : Buffer.from(o.root));
  if (!bytesEqual(new Uint8Array(root.raw), doc.cabundle[0]!)) {
    throw new AttestationError('SIGNATURE', 'cabundle[0] is not the pinned AWS Nitro root');
  }
  const chain = [...doc.cabundle, doc.certificate].map((d) => new X509Certificate(Buffer.from(d)));
  for (let i = 0; i < chain.length; i++) {
    const c = chain[i]!;
    const issuer = chain[Math.max(0, i - 1)]!;
    if (!c.verify(issuer.publicKey))
      throw new AttestationError('SIGNATURE', `certificate ${i} is not signed by its issuer`);
    if (o.nowMs < Date.parse(c.validFrom) || o.nowMs > Date.parse(c.validTo)) {
      throw new AttestationError(
        'EXPIRED',
        `certificate ${i} (${c.subject.split('\n').join(',')}) is not valid now`,
      );
    }
  }
  checkChainRoles(chain);
  const toBeSigned = encode(['Signature1', prot, new Uint8Array(0), payload]);
  const leaf = chain[chain.length - 1]!;
  if (!cryptoVerify('sha384', toBeSigned, { key: leaf.publicKey, dsaEncoding: 'ieee-p1363' }, sig)) {
    throw new AttestationError('SIGNATURE', 'the COSE signature does not verify under the leaf certificate');
  }
  const pcr = (i: number) => toHex(doc.pcrs.get(i) ?? new Uint8Array());
  const userData = doc.user_data ?? new Uint8Array(0);
  return {
    tee: 'nitro',
    reportData: new Uint8Array(userData),
    measurements: { pcr0: pcr(0), pcr1: pcr(1), pcr2: pcr(2) },
  };
}

/**
 * Each certificate's role, as AWS's verification steps require: every issuer a CA
 * (basicConstraints cA, keyUsage keyCertSign) whose pathLenConstraint allows the CAs below it,
 * the leaf no CA and allowed to sign (digitalSignature). Without it a certificate that may not
 * issue (a leaf) could vouch for a key of its holder's choosing.
 */
function checkChainRoles(chain: X509Certificate[]): void {
  const last = chain.length - 1;
  chain.forEach((c, i) => {
    const p = new x509.X509Certificate(new Uint8Array(c.raw));
    const bc = p.getExtension(x509.BasicConstraintsExtension);
    const ku = p.getExtension(x509.KeyUsagesExtension);
    const has = (flag: x509.KeyUsageFlags) => ku !== null && (ku.usages & flag) === flag;
    if (i < last) {
      if (!bc?.ca || !has(x509.KeyUsageFlags.keyCertSign)) {
        throw new AttestationError(
          'SIGNATURE',
          `certificate ${i} issues the next one but is not a CA (basicConstraints cA and keyUsage keyCertSign)`,
        );
      }
      if (bc.pathLength !== undefined && bc.pathLength < last - 1 - i) {
        throw new AttestationError(
          'SIGNATURE',
          `certificate ${i} allows ${bc.pathLength} CA(s) below it, the chain has ${last - 1 - i}`,
        );
      }
    } else if (bc?.ca || !has(x509.KeyUsageFlags.digitalSignature)) {
      throw new AttestationError(
        'SIGNATURE',
        'the leaf certificate is a CA or may not sign (keyUsage digitalSignature)',
      );
    }
  });
}
