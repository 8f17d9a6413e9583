// The TEE-instance variables (spec tee.md §1), kept beside config-vars.ts and spread into its
// table, so the README's Configuration table lists them too.
import { z } from 'zod';
import type { Var } from './config-var-parsers.ts';

const v = <S extends z.ZodType>(spec: Var<S>): Var<S> => spec;
const hexList = z
  .string()
  .transform((s) => s.split(/[\s,]+/).filter(Boolean))
  .refine(
    (xs) => xs.every((x) => /^(0x)?([0-9a-fA-F]{2})+$/.test(x)),
    'expected hex values separated by commas',
  );

export const TEE_VARIABLES = {
  TEE_BACKEND: v({
    group: 'TEE',
    schema: z.enum(['direct', 'phala'], { message: 'expected direct or phala' }),
    defaultDoc: '(none; required in tee-instance mode)',
    doc: 'Where TEE evidence comes from: direct (this operator runs on a TDX/SEV-SNP VM; quotes from configfs-tsm) or phala (each sandbox is a dstack CVM on Phala Cloud; its sidecar holds the key and quotes)',
  }),
  TEE_DIRECT_TYPE: v({
    group: 'TEE',
    schema: z.enum(['tdx', 'sev'], { message: 'expected tdx or sev' }),
    defaultDoc: '(none; required with TEE_BACKEND=direct)',
    doc: 'The confidential VM this operator runs on: tdx (provider tdx_guest) or sev (sev_guest)',
  }),
  TEE_TSM_REPORT_ROOT: v({
    group: 'TEE',
    schema: z.string().trim().min(1),
    def: '/sys/kernel/config/tsm/report',
    doc: 'The configfs-tsm report directory (Linux ≥ 6.7)',
  }),
  TEE_PCCS_URL: v({
    group: 'TEE',
    schema: z.string().trim().url(),
    def: 'https://pccs.phala.network',
    doc: 'PCCS the operator fetches TDX collateral from (served beside each quote)',
  }),
  TEE_ACCEPTED_TCB_STATUSES: v({
    group: 'TEE',
    schema: z.string().transform((s) => s.split(/[\s,]+/).filter(Boolean)),
    def: 'UpToDate',
    doc: "TDX TCB statuses the operator's own check accepts",
  }),
  SANDBOX_TEE_EXPECTED_MEASUREMENTS: v({
    group: 'TEE',
    schema: hexList,
    def: '',
    doc: "Measurements the operator's own check (a hint to clients) accepts: MRTD / SNP MEASUREMENT, hex, comma-separated",
  }),
  SANDBOX_TEE_REQUIRE_PINNED_MEASUREMENT: v({
    group: 'TEE',
    schema: z
      .string()
      .trim()
      .toLowerCase()
      .transform((s) => !['0', 'false', 'no', 'off'].includes(s)),
    def: 'true',
    doc: "With an empty allow-list, the operator's own verdict is measurement_mismatch",
  }),
  PHALA_API_KEY: v({
    group: 'TEE',
    schema: z.string().trim().min(1),
    secret: true,
    defaultDoc: '(none; required with TEE_BACKEND=phala)',
    doc: 'Phala Cloud API key (header x-api-key) the operator deploys CVMs with',
  }),
  PHALA_API_ENDPOINT: v({
    group: 'TEE',
    schema: z.string().trim().url(),
    def: 'https://cloud-api.phala.network/api/v1',
    doc: 'Phala Cloud REST API base URL',
  }),
  PHALA_SANDBOX_IMAGE: v({
    group: 'TEE',
    schema: z
      .string()
      .trim()
      .regex(/@sha256:[0-9a-f]{64}$/, 'expected an image pinned by digest (name@sha256:<64 hex>)'),
    defaultDoc: '(none; required with TEE_BACKEND=phala)',
    doc: 'The sandbox image (with our sidecar) each CVM pulls, pinned by digest: a tag could change under the measurement',
  }),
  TEE_TEST_ANCHORS_DIR: v({
    group: 'TEE',
    schema: z.string().trim().min(1),
    defaultDoc: '(none)',
    doc: 'TEST_MODE only: ark.pem/ask.pem of a test SEV PKI trusted instead of AMD’s (the devnet)',
  }),
} as const;
