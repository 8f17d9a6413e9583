// Production trust anchors. Intel's root ships inside dcap-qvl; AMD Milan ARK/ASK and the AWS
// Nitro root G1 are public certificates (copied from testdata/, sources in its README).
// Tests and TEST_MODE operators pass their own anchors instead.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SevAnchors } from './sev.ts';

export interface TrustAnchors {
  /** Intel SGX root CA (DER); undefined → dcap-qvl's bundled production root. */
  intelRootDer?: Uint8Array;
  sev: SevAnchors;
  nitroRoot: string | Uint8Array;
}

const file = (p: string) => readFileSync(fileURLToPath(new URL(`../testdata/${p}`, import.meta.url)), 'utf8');

let prod: TrustAnchors | undefined;
/** AMD Milan (ARK-Milan, SEV-Milan) and AWS Nitro root G1. Genoa/Turin anchors are not bundled. */
export function productionAnchors(): TrustAnchors {
  prod ??= {
    sev: { ark: file('sev/amd_milan_ark.pem'), ask: file('sev/amd_milan_ask.pem') },
    nitroRoot: file('nitro/aws_nitro_enclaves_root_g1.pem'),
  };
  return prod;
}
