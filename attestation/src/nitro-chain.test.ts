// Security (forged chain): the Nitro verifier checks each certificate's role, not only its
// signature. A chain under a root we pin (a test PKI standing in for AWS's, ECDSA P-384 as AWS
// uses) verifies when built as AWS builds it; it is refused when an issuer is no CA, may not
// sign certificates, or has a path length too short, and when the leaf is a CA or may not sign —
// e.g. a leaf's holder issuing a "leaf" for a key of their choosing.
import { createPrivateKey, sign, webcrypto } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { verifyNitroDocument } from './nitro.ts';

x509.cryptoProvider.set(webcrypto as never);
const ALG = { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' } as const;
const now = Date.now();
const KU = x509.KeyUsageFlags;
const CA_KU = KU.digitalSignature | KU.keyCertSign | KU.cRLSign;

interface Role {
  ca: boolean;
  pathLength?: number;
  usages: number;
  noBasicConstraints?: boolean;
}
const gen = () =>
  webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;

/** root → … → leaf with the given roles; returns DERs and the leaf's private key. */
async function chainOf(roles: Role[]) {
  const keys = await Promise.all(roles.map(gen));
  const certs: x509.X509Certificate[] = [];
  for (const [i, r] of roles.entries()) {
    const extensions = [
      ...(r.noBasicConstraints ? [] : [new x509.BasicConstraintsExtension(r.ca, r.pathLength, true)]),
      new x509.KeyUsagesExtension(r.usages, true),
    ];
    const common = {
      notBefore: new Date(now - 3_600_000),
      notAfter: new Date(now + 3_600_000),
      signingAlgorithm: ALG,
      extensions,
      serialNumber: `0${i + 1}`,
    };
    certs.push(
      i === 0
        ? await x509.X509CertificateGenerator.createSelfSigned({
            name: 'CN=test-nitro-root',
            keys: keys[0]!,
            ...common,
          })
        : await x509.X509CertificateGenerator.create({
            subject: `CN=cert-${i}`,
            issuer: certs[i - 1]!.subject,
            publicKey: keys[i]!.publicKey,
            signingKey: keys[i - 1]!.privateKey,
            ...common,
          }),
    );
  }
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.at(-1)!.privateKey);
  return {
    ders: certs.map((c) => new Uint8Array(c.rawData)),
    leafKey: createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' }),
  };
}

/** An NSM-shaped COSE_Sign1 document signed ES384 by the chain's leaf. */
async function documentFrom(roles: Role[]) {
  const { ders, leafKey } = await chainOf(roles);
  const prot = encode(new Map([[1, -35]]));
  const payload = encode(
    new Map<string, unknown>([
      ['module_id', 'i-test-enc'],
      ['digest', 'SHA384'],
      ['timestamp', now],
      ['pcrs', new Map([[0, new Uint8Array(48).fill(1)]])],
      ['certificate', ders.at(-1)!],
      ['cabundle', ders.slice(0, -1)],
      ['user_data', new Uint8Array(64).fill(7)],
    ]),
  );
  const sig = sign('sha384', encode(['Signature1', prot, new Uint8Array(0), payload]), {
    key: leafKey,
    dsaEncoding: 'ieee-p1363',
  });
  return { cose: encode([prot, new Map(), payload, new Uint8Array(sig)]), root: ders[0]! };
}

const root: Role = { ca: true, usages: CA_KU };
const inter = (pathLength?: number): Role => ({
  ca: true,
  usages: CA_KU,
  ...(pathLength === undefined ? {} : { pathLength }),
});
const leaf: Role = { ca: false, usages: KU.digitalSignature | KU.nonRepudiation };
const verify = async (roles: Role[]) => {
  const d = await documentFrom(roles);
  return () => verifyNitroDocument(d.cose, { nowMs: now, root: d.root });
};

describe('forged Nitro chain: certificate roles', () => {
  it('a chain built as AWS builds it (root, CAs with shrinking path lengths, a signing leaf) verifies', async () => {
    expect((await verify([root, inter(2), inter(1), inter(0), leaf]))().measurements.pcr0).toBe(
      '01'.repeat(48),
    );
  });
  it('refuses an issuer that is no CA (cA false, or no basicConstraints)', async () => {
    expect(await verify([root, { ...leaf }, leaf])).toThrow(
      /certificate 1 issues the next one but is not a CA/,
    );
    expect(await verify([root, { ca: true, usages: CA_KU, noBasicConstraints: true }, leaf])).toThrow(
      /not a CA/,
    );
  });
  it("a leaf's holder issuing a new leaf for their own key is refused", async () => {
    expect(await verify([root, inter(), leaf, leaf])).toThrow(
      /certificate 2 issues the next one but is not a CA/,
    );
  });
  it('refuses an issuer without keyCertSign, and a path length the chain exceeds', async () => {
    expect(await verify([root, { ca: true, usages: KU.digitalSignature }, leaf])).toThrow(/keyCertSign/);
    expect(await verify([root, inter(0), inter(), leaf])).toThrow(
      /certificate 1 allows 0 CA\(s\) below it, the chain has 1/,
    );
  });
  it('refuses a leaf that is a CA or may not sign', async () => {
    expect(await verify([root, inter(), { ca: true, usages: CA_KU }])).toThrow(/leaf certificate is a CA/);
    expect(await verify([root, inter(), { ca: false, usages: KU.keyEncipherment }])).toThrow(/may not sign/);
  });
});
