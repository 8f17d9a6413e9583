// Test-only helpers of the attestation package (a test SEV-SNP PKI and report signer).
export {
  createSevTestPki,
  loadSevTestPki,
  type SevTestPki,
  type SnpReportFields,
  saveSevTestPki,
  signSnpReport,
} from './sev-test-pki.ts';
