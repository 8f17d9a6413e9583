// A test SEV-SNP PKI (ARK → ASK → VCEK, all ECDSA P-384) and a report signer, for tests and the
// devnet's fake configfs-tsm firmware. Its anchors are accepted only where a caller passes them
// (the operator does so only in TEST_MODE). Never use outside tests.
import { createPrivateKey, type KeyObject, sign, webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it loaded first
import * as x509 from '@peculiar/x509';
import { type SevMinTcb, SNP_REPORT_SIZE } from '../sev.ts';
import { HWID_OID, VCEK_SPL_OIDS } from '../sev-vcek.ts';

x509.cryptoProvider.set(webcrypto as never);

export interface SevTestPki {
  arkPem: string;
  askPem: string;
  vcekDer: Uint8Array;
  vcekKey: KeyObject;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' } as const;

/** The TCB and chip id signSnpReport reports unless told otherwise, and the test VCEK's. */
export const TEST_TCB: SevMinTcb = { bootloader: 3, tee: 0, snp: 8, microcode: 115 };
export const TEST_CHIP_ID = new Uint8Array(64).fill(0xc1);

export interface SevTestVcekOptions {
  /** The TCB the VCEK is issued for (its SPL extensions; default TEST_TCB). */
  tcb?: SevMinTcb;
  /** Its hwID extension (default TEST_CHIP_ID). */
  hwId?: Uint8Array;
}

/** AMD's VCEK extensions: each SPL a DER INTEGER, the hwID its 64 raw bytes. */
function vcekExtensions(o: SevTestVcekOptions): x509.Extension[] {
  const tcb = o.tcb ?? TEST_TCB;
  const int = (n: number) => {
    const bytes = n === 0 ? [0] : [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
    if ((bytes[0] ?? 0) & 0x80) bytes.unshift(0);
    return new Uint8Array([0x02, bytes.length, ...bytes]);
  };
  return [
    ...(Object.keys(VCEK_SPL_OIDS) as (keyof SevMinTcb)[]).map(
      (k) => new x509.Extension(VCEK_SPL_OIDS[k], false, int(tcb[k])),
    ),
    new x509.Extension(HWID_OID, false, o.hwId ?? TEST_CHIP_ID),
  ];
}

export async function createSevTestPki(
  now = Date.now(),
  vcekOptions: SevTestVcekOptions = {},
): Promise<SevTestPki> {
  const gen = () =>
    webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
  const [ark, ask, vcek] = await Promise.all([gen(), gen(), gen()]);
  const notBefore = new Date(now - 86_400_000);
  const notAfter = new Date(now + 5 * 365 * 86_400_000);
  const ca = [new x509.BasicConstraintsExtension(true, undefined, true)];
  const arkCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=ARK-Test',
    keys: ark,
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    extensions: ca,
  });
  const askCert = await x509.X509CertificateGenerator.create({
    subject: 'CN=SEV-Test',
    issuer: arkCert.subject,
    publicKey: ask.publicKey,
    signingKey: ark.privateKey,
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    extensions: ca,
  });
  const vcekCert = await x509.X509CertificateGenerator.create({
    subject: 'CN=SEV-VCEK-Test',
    issuer: askCert.subject,
    publicKey: vcek.publicKey,
    signingKey: ask.privateKey,
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    extensions: vcekExtensions(vcekOptions),
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', vcek.privateKey);
  return {
    arkPem: arkCert.toString('pem'),
    askPem: askCert.toString('pem'),
    vcekDer: new Uint8Array(vcekCert.rawData),
    vcekKey: createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' }),
  };
}

/** Writes ark.pem, ask.pem (the anchors), vcek.der and vcek.key.pem (the firmware's). */
export async function saveSevTestPki(dir: string, p: SevTestPki): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'ark.pem'), p.arkPem);
  await writeFile(join(dir, 'ask.pem'), p.askPem);
  await writeFile(join(dir, 'vcek.der'), p.vcekDer);
  await writeFile(join(dir, 'vcek.key.pem'), p.vcekKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
}

export async function loadSevTestPki(dir: string): Promise<SevTestPki> {
  return {
    arkPem: await readFile(join(dir, 'ark.pem'), 'utf8'),
    askPem: await readFile(join(dir, 'ask.pem'), 'utf8'),
    vcekDer: new Uint8Array(await readFile(join(dir, 'vcek.der'))),
    vcekKey: createPrivateKey(await readFile(join(dir, 'vcek.key.pem'), 'utf8')),
  };
}

export interface SnpReportFields {
  reportData: Uint8Array;
  measurement?: Uint8Array;
  hostData?: Uint8Array;
  version?: number;
  policy?: bigint;
  vmpl?: number;
  /** REPORTED_TCB (default TEST_TCB, the test VCEK's). */
  reportedTcb?: SevMinTcb;
  /** CHIP_ID (default TEST_CHIP_ID, the test VCEK's). */
  chipId?: Uint8Array;
}

/** A 1184-byte SNP report with the given fields, signed by `vcekKey` as AMD firmware would. */
export function signSnpReport(f: SnpReportFields, vcekKey: KeyObject): Uint8Array {
  const r = new Uint8Array(SNP_REPORT_SIZE);
  const v = new DataView(r.buffer);
  v.setUint32(0, f.version ?? 3, true);
  v.setBigUint64(8, f.policy ?? 0x30000n, true);
  v.setUint32(0x30, f.vmpl ?? 0, true);
  v.setUint32(0x34, 1, true); // signature algorithm: ECDSA P-384 with SHA-384
  r.set(f.reportData.subarray(0, 64), 0x50);
  r.set(f.measurement ?? new Uint8Array(48).fill(0x5a), 0x90);
  if (f.hostData) r.set(f.hostData, 0xc0);
  const tcb = f.reportedTcb ?? TEST_TCB;
  r.set([tcb.bootloader, tcb.tee, 0, 0, 0, 0, tcb.snp, tcb.microcode], 0x180); // reported_tcb
  r.set(f.chipId ?? TEST_CHIP_ID, 0x1a0);
  const sig = sign('sha384', r.subarray(0, 0x2a0), { key: vcekKey, dsaEncoding: 'ieee-p1363' });
  r.set(Buffer.from(sig.subarray(0, 48)).reverse(), 0x2a0);
  r.set(Buffer.from(sig.subarray(48, 96)).reverse(), 0x2e8);
  return r;
}
