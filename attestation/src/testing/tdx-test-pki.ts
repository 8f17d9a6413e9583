// A test Intel DCAP PKI (root → PCK platform CA → PCK leaf, root → TCB signing; ECDSA P-256) that
// re-signs a real TDX quote v4 over any report_data, with the PCS collateral (TCB info, QE
// identity, CRLs) dcap-qvl checks, so a fake dstack agent's quotes verify end to end against this
// root only. The PCK leaf carries the real sample's SGX extension (FMSPC, TCB components), the QE
// report the real QE's identity. Accepted only where a caller passes the root (the operator and the
// CLI do so only in test mode). Never use outside tests.
import { createHash, createPrivateKey, KeyObject, sign, webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it loaded first
import * as x509 from '@peculiar/x509';
import type { TdxCollateral } from '../tdx.ts';

x509.cryptoProvider.set(webcrypto as never);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const SGX_EXTENSION_OID = '1.2.840.113741.1.13.1';
const HEADER = 48;
const TD10_BODY = 584;
const ENCLAVE_REPORT = 384;

const sample = (p: string) => readFile(new URL(`../../testdata/tdx/${p}`, import.meta.url));
/** The real quote (and its platform's collateral) the test quotes are made from. */
const TEMPLATE = 'tdx_quote.bin';

export interface TdxTestPki {
  /** The test root (DER): the only anchor its quotes verify against. */
  rootDer: Uint8Array;
  rootPem: string;
  /** The collateral a PCCS would serve for its quotes (valid for 30 days from `now`). */
  collateral: TdxCollateral;
  /** The real quote v4 whose header and TD report body the test quotes carry. */
  template: Uint8Array;
  /** The PKI's certificates and signing keys (PEM). */
  pem: { pckLeaf: string; pckCa: string; tcbSigning: string; attestationKey: string; pckKey: string };
}

const pemOf = (c: x509.X509Certificate) => c.toString('pem');

/** Raw r‖s ECDSA-P256/SHA-256, the form the quote and the PCS signatures carry. */
const sig = (key: KeyObject, data: Uint8Array) =>
  new Uint8Array(sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' }));

export async function createTdxTestPki(now = Date.now()): Promise<TdxTestPki> {
  const gen = () =>
    webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
  const [root, pckCa, pck, tcb] = await Promise.all([gen(), gen(), gen(), gen()]);
  const notBefore = new Date(now - 86_400_000);
  const notAfter = new Date(now + 5 * 365 * 86_400_000);
  const ca = () => [new x509.BasicConstraintsExtension(true, 0, true)];
  const rootCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=Test (not Intel) SGX Root CA, O=agent-sandbox tests',
    keys: root,
    notBefore,
    notAfter,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, 1, true)],
  });
  const issued = (
    subject: string,
    key: webcrypto.CryptoKey,
    by: webcrypto.CryptoKey,
    issuer: string,
    ext: x509.Extension[],
  ) =>
    x509.X509CertificateGenerator.create({
      subject,
      issuer,
      publicKey: key,
      signingKey: by,
      notBefore,
      notAfter,
      signingAlgorithm: ALG,
      extensions: ext,
    });
  const pckCaCert = await issued(
    'CN=Test (not Intel) SGX PCK Platform CA',
    pckCa.publicKey,
    root.privateKey,
    rootCert.subject,
    ca(),
  );
  // The real sample PCK leaf's SGX extension: FMSPC, PCE id and the TCB the collateral matches.
  const quote = await sample(TEMPLATE);
  const realLeaf = new x509.X509Certificate(pemChainOf(quote)[0]!);
  const sgx = realLeaf.getExtension(SGX_EXTENSION_OID);
  if (!sgx) throw new Error('the sample PCK certificate has no SGX extension');
  const pckCert = await issued(
    'CN=Test (not Intel) SGX PCK Certificate',
    pck.publicKey,
    pckCa.privateKey,
    pckCaCert.subject,
    [new x509.Extension(SGX_EXTENSION_OID, false, sgx.value)],
  );
  const tcbCert = await issued(
    'CN=Test (not Intel) SGX TCB Signing',
    tcb.publicKey,
    root.privateKey,
    rootCert.subject,
    [],
  );
  const crl = (issuer: x509.X509Certificate, key: webcrypto.CryptoKey) =>
    x509.X509CrlGenerator.create({
      issuer: issuer.subject,
      thisUpdate: notBefore,
      nextUpdate: new Date(now + 30 * 86_400_000),
      signingAlgorithm: ALG,
      signingKey: key,
    });
  const [rootCrl, pckCrl] = await Promise.all([
    crl(rootCert, root.privateKey),
    crl(pckCaCert, pckCa.privateKey),
  ]);

  const real2 = JSON.parse((await sample('tdx_quote_collateral.json')).toString('utf8')) as TdxCollateral;
  const window = (json: string) => {
    const v = JSON.parse(json) as Record<string, unknown>;
    v.issueDate = new Date(now - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    v.nextUpdate = new Date(now + 30 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
    return v;
  };
  const tcbKey = KeyObject.from(tcb.privateKey);
  const tcbInfo = JSON.stringify(window(real2.tcb_info));
  const qeIdentity = JSON.stringify(window(real2.qe_identity));
  const tcbChain = `${pemOf(tcbCert)}\n${pemOf(rootCert)}\n`;
  const hex = (b: ArrayBuffer | Uint8Array) =>
    Buffer.from(b instanceof Uint8Array ? b : new Uint8Array(b)).toString('hex');
  const pkcs8 = async (k: webcrypto.CryptoKey) =>
    KeyObject.from(k).export({ type: 'pkcs8', format: 'pem' }) as string;
  const attestation = await gen();
  return {
    template: new Uint8Array(quote),
    rootDer: new Uint8Array(rootCert.rawData),
    rootPem: pemOf(rootCert),
    collateral: {
      pck_crl_issuer_chain: `${pemOf(pckCaCert)}\n${pemOf(rootCert)}\n`,
      root_ca_crl: hex(rootCrl.rawData),
      pck_crl: hex(pckCrl.rawData),
      tcb_info_issuer_chain: tcbChain,
      tcb_info: tcbInfo,
      tcb_info_signature: hex(sig(tcbKey, Buffer.from(tcbInfo))),
      qe_identity_issuer_chain: tcbChain,
      qe_identity: qeIdentity,
      qe_identity_signature: hex(sig(tcbKey, Buffer.from(qeIdentity))),
    },
    pem: {
      pckLeaf: pemOf(pckCert),
      pckCa: pemOf(pckCaCert),
      tcbSigning: pemOf(tcbCert),
      attestationKey: await pkcs8(attestation.privateKey),
      pckKey: await pkcs8(pck.privateKey),
    },
  };
}

/** The PEM certificates of a v4 quote's certification data (type 6 → QE report → type 5 chain). */
function pemChainOf(quote: Uint8Array): string[] {
  const p = parseV4(quote);
  const text = Buffer.from(quote.subarray(p.chainAt, p.chainAt + p.chainLen)).toString('utf8');
  return text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
}

function parseV4(q: Uint8Array) {
  const b = Buffer.from(q);
  if (b.readUInt16LE(0) !== 4 || b.readUInt32LE(4) !== 0x81) throw new Error('not a TDX quote v4');
  const auth = HEADER + TD10_BODY + 4;
  const outerType = b.readUInt16LE(auth + 128);
  if (outerType !== 6) throw new Error('the quote has no QE report certification data');
  const qeAt = auth + 128 + 6;
  const authSizeAt = qeAt + ENCLAVE_REPORT + 64;
  const qeAuthLen = b.readUInt16LE(authSizeAt);
  const innerAt = authSizeAt + 2 + qeAuthLen;
  if (b.readUInt16LE(innerAt) !== 5) throw new Error('the quote carries no PCK certificate chain');
  return {
    auth,
    qeAt,
    qeAuthLen,
    authSizeAt,
    innerAt,
    chainAt: innerAt + 6,
    chainLen: b.readUInt32LE(innerAt + 2),
  };
}

/**
 * A quote v4 with this report_data, signed by the test PKI: the template's header and TD report
 * body (report_data replaced), a fresh attestation key certified by a QE report the test PCK
 * key signs, and the test PCK chain in its certification data. `rtmr3` replaces the template's.
 */
export function signTdxQuote(
  pki: Pick<TdxTestPki, 'pem' | 'rootPem' | 'template'>,
  reportData: Uint8Array,
  o: { rtmr3?: Uint8Array } = {},
): Uint8Array {
  if (reportData.length !== 64) throw new Error('report_data is 64 bytes');
  if (o.rtmr3 && o.rtmr3.length !== 48) throw new Error('RTMR3 is 48 bytes');
  const t = Buffer.from(pki.template);
  const p = parseV4(t);
  const signed = Buffer.from(t.subarray(0, HEADER + TD10_BODY));
  Buffer.from(reportData).copy(signed, HEADER + 520);
  // RTMR3 (e.g. the replay of a dstack event log the fake agent serves beside the quote).
  if (o.rtmr3) Buffer.from(o.rtmr3).copy(signed, HEADER + 472);
  const att = createPrivateKey(pki.pem.attestationKey);
  const jwk = att.export({ format: 'jwk' }) as { x: string; y: string };
  const attPub = Buffer.concat([Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
  const qeAuth = t.subarray(p.authSizeAt + 2, p.authSizeAt + 2 + p.qeAuthLen);
  const qeReport = Buffer.from(t.subarray(p.qeAt, p.qeAt + ENCLAVE_REPORT));
  qeReport.fill(0, 320, 384);
  createHash('sha256')
    .update(Buffer.concat([attPub, qeAuth]))
    .digest()
    .copy(qeReport, 320);
  const qeSig = sig(createPrivateKey(pki.pem.pckKey), qeReport);
  const chain = Buffer.from(`${pki.pem.pckLeaf}\n${pki.pem.pckCa}\n${pki.rootPem}\n`);
  const u16 = (n: number) => {
    const x = Buffer.alloc(2);
    x.writeUInt16LE(n);
    return x;
  };
  const u32 = (n: number) => {
    const x = Buffer.alloc(4);
    x.writeUInt32LE(n);
    return x;
  };
  const qeCertData = Buffer.concat([
    qeReport,
    qeSig,
    u16(qeAuth.length),
    qeAuth,
    u16(5),
    u32(chain.length),
    chain,
  ]);
  const authData = Buffer.concat([sig(att, signed), attPub, u16(6), u32(qeCertData.length), qeCertData]);
  return new Uint8Array(Buffer.concat([signed, u32(authData.length), authData]));
}

/** The test root as a trust-anchor directory file (`--test-anchors DIR` reads intel-root.pem). */
export async function saveTdxTestRoot(dir: string, pki: Pick<TdxTestPki, 'rootPem'>): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'intel-root.pem'), pki.rootPem);
}

/**
 * A PCCS (the Intel PCS v4 paths dcap-qvl's getCollateral asks) serving the test PKI's
 * collateral: PCK CRL, TCB info, QE identity, root CA CRL, with their issuer-chain headers.
 */
export async function startFakePccs(
  pki: Pick<TdxTestPki, 'collateral'>,
): Promise<{ url: string; close(): Promise<void> }> {
  const c = pki.collateral;
  const srv = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://pccs');
    const chain = (name: string, v: string) => res.setHeader(name, encodeURIComponent(v));
    if (u.pathname === '/sgx/certification/v4/pckcrl') {
      chain('SGX-PCK-CRL-Issuer-Chain', c.pck_crl_issuer_chain);
      return void res.end(Buffer.from(c.pck_crl, 'hex'));
    }
    if (u.pathname === '/sgx/certification/v4/rootcacrl') return void res.end(c.root_ca_crl);
    if (u.pathname === '/tdx/certification/v4/tcb') {
      chain('TCB-Info-Issuer-Chain', c.tcb_info_issuer_chain);
      return void res.end(`{"tcbInfo":${c.tcb_info},"signature":"${c.tcb_info_signature}"}`);
    }
    if (u.pathname === '/tdx/certification/v4/qe/identity') {
      chain('SGX-Enclave-Identity-Issuer-Chain', c.qe_identity_issuer_chain);
      return void res.end(`{"enclaveIdentity":${c.qe_identity},"signature":"${c.qe_identity_signature}"}`);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}
