// @agent-sandbox/attestation/sealing: the enclave side only (binding, key pair, sealed-secret
// opener), without the verifiers; the sidecar inside a CVM bundles this and nothing heavier.
export { bindingReportData, keyId, parseContext, parseNonce } from './src/binding.ts';
export { fromHex, toHex } from './src/bytes.ts';
export { CHANNEL_RESPONSE_TYPE, MAX_CHUNK, type ResponseSealer } from './src/channel.ts';
export { ChannelEndpoint, type ChannelRequest, encodeHead } from './src/channel-owner.ts';
export { deriveKeyPair, generateKeyPair } from './src/hpke.ts';
export { SEALED_ALGORITHM, type SealedBody, SealedSecretOpener } from './src/sealed.ts';
