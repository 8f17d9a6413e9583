// @agent-sandbox/attestation: TEE evidence verification, the sealing-key binding, the v1
// on-chain document and HPKE sealed secrets. Pure TS; time and trust anchors are parameters.
export { productionAnchors, type TrustAnchors } from './src/anchors.ts';
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
  CHANNEL_REQUEST_TYPE,
  CHANNEL_RESPONSE_TYPE,
  decapsulateRequest,
  encapsulateRequest,
  keyConfigId,
  ResponseOpener,
  ResponseSealer,
} from './src/channel.ts';
export {
  ChannelClient,
  type ChannelClientOptions,
  type ChannelMethod,
  type ChannelResponse,
} from './src/channel-client.ts';
export {
  CHANNEL_SIWE_DOMAIN,
  CHANNEL_WINDOW_MS,
  ChannelEndpoint,
  type ChannelRequest,
  encodeHead,
  type OwnerAuth,
  OwnerVerifier,
  ownerChannelMessage,
} from './src/channel-owner.ts';
export {
  type AttestationDocV1,
  AttestationDocV1Schema,
  docAsAttestation,
  parseAttestationDoc,
  serializeAttestationDoc,
} from './src/document.ts';
export {
  checkDstackEventLog,
  DSTACK_RUNTIME_EVENT_TYPE,
  type DstackAppFacts,
  type DstackEvent,
  parseDstackEventLog,
  replayDstackRtmrs,
} from './src/dstack-eventlog.ts';
export { AttestationError, type AttestationErrorCode } from './src/errors.ts';
export { deriveKeyPair, generateKeyPair, setupBaseR, setupBaseS } from './src/hpke.ts';
export { verifyNitroDocument } from './src/nitro.ts';
export {
  SEALED_ALGORITHM,
  type SealedBody,
  SealedBodySchema,
  SealedSecretOpener,
  sealSecrets,
} from './src/sealed.ts';
export {
  certTableWithVcek,
  parseSnpReport,
  type SevAnchors,
  type SevMinTcb,
  SNP_REPORT_SIZE,
  vcekFromCertTable,
  verifySnpReport,
} from './src/sev.ts';
export { type TdxCollateral, verifyTdxQuote } from './src/tdx.ts';
export { type EvidenceFacts, TEE_TYPE_CODE, type TeeKind, type Verification } from './src/types.ts';
export {
  type AttestationOptions,
  type AttestationResult,
  type BoundAttestation,
  type EvidenceOptions,
  type MeasurementEntry,
  measurementAllowed,
  parseAllowList,
  verifyBoundAttestation,
  verifyEvidence,
} from './src/verify.ts';
