// @agent-sandbox/attestation/testing: test-only door (a test SEV-SNP PKI and report signer); never imported by product code.
export {
  createSevTestPki,
  loadSevTestPki,
  type SevTestPki,
  type SnpReportFields,
  saveSevTestPki,
  signSnpReport,
} from './src/testing/sev-test-pki.ts';
