// @agent-sandbox/attestation/browser: the part of the verifier that runs in a web page on WebCrypto
// (no node built-ins): SEV-SNP evidence (ARK → ASK → VCEK chain, report signature, policy), the
// tee.md §4 binding of report_data to context + key + nonce, and the measurement allow-list.
// TDX and Nitro are verified by the CLI (`agent-sandbox tee verify`); see src/verify-web.ts.
// And the owner's end of the channel into the enclave (HPKE on @noble here: #platform's browser
// condition) plus sealed secrets, so the console speaks to the enclave as the CLI does.
export { AMD_MILAN_ARK_PEM, AMD_MILAN_ASK_PEM } from './src/amd-milan.ts';
export {
  BINDING_DOMAIN,
  type BindingContext,
  bindingReportData,
  checkBinding,
  contextString,
  keyId,
  onChainNonce,
  parseContext,
  parseNonce,
} from './src/binding.ts';
export { bytesEqual, fromHex, toHex } from './src/bytes.ts';
export {
  ChannelClient,
  type ChannelClientOptions,
  type ChannelMethod,
  type ChannelResponse,
} from './src/channel-client.ts';
export { type AttestationDocV1, docAsAttestation, parseAttestationDoc } from './src/document.ts';
export { AttestationError, type AttestationErrorCode } from './src/errors.ts';
export { type MeasurementEntry, measurementAllowed, parseAllowList } from './src/measurements.ts';
export { type SealedBody, sealSecrets } from './src/sealed.ts';
export { parseSnpReport, type SevAnchors, type SevMinTcb, SNP_REPORT_SIZE } from './src/sev-report.ts';
export { verifySnpReportWeb } from './src/sev-web.ts';
export type { EvidenceFacts, TeeKind, Verification } from './src/types.ts';
export type { AttestationResult, BoundAttestation } from './src/verify.ts';
export { CLI_ONLY_REASON, verifyBoundAttestationWeb, type WebAttestationOptions } from './src/verify-web.ts';
