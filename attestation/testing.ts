// @agent-sandbox/attestation/testing: test-only door (a test SEV-SNP PKI and report signer); never imported by product code.
export {
  createSevTestPki,
  loadSevTestPki,
  type SevTestPki,
  type SevTestVcekOptions,
  type SnpReportFields,
  saveSevTestPki,
  signSnpReport,
  TEST_CHIP_ID,
  TEST_TCB,
} from './src/testing/sev-test-pki.ts';
export {
  createTdxTestPki,
  saveTdxTestRoot,
  signTdxQuote,
  startFakePccs,
  type TdxTestPki,
} from './src/testing/tdx-test-pki.ts';
