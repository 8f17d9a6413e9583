// The `direct` backend: the operator itself runs on a TDX or SEV-SNP confidential VM; quotes come
// from configfs-tsm. TDX collateral is fetched from a PCCS (dcap-qvl getCollateral); the SEV VCEK
// comes from the auxblob the host serves.
import { toHex, vcekFromCertTable } from '@agent-sandbox/attestation';
import { getCollateral } from '@phala/dcap-qvl';
import { RuntimeError } from '../errors.ts';
import type { LocalTeeBackend, TeeEvidence } from './backend.ts';
import { checkTsmTree, type TsmOptions, tsmReport } from './configfs-tsm.ts';

export interface DirectBackendOptions {
  type: 'tdx' | 'sev';
  /** TEE_TSM_REPORT_ROOT. */
  root: string;
  /** TEE_PCCS_URL, for TDX collateral. */
  pccsUrl: string;
}

export class DirectTeeBackend implements LocalTeeBackend {
  readonly name = 'direct';
  readonly keyHolder = 'operator';
  readonly #tsm: TsmOptions;
  /** One report at a time from this process: the entry is shared, and the kernel serialises anyway. */
  #queue: Promise<unknown> = Promise.resolve();
  constructor(private readonly o: DirectBackendOptions) {
    this.#tsm = { root: o.root, provider: o.type === 'tdx' ? 'tdx_guest' : 'sev_guest' };
  }
  teeType() {
    return this.o.type;
  }
  supportsAttestationReportData() {
    return true;
  }
  async check(): Promise<void> {
    await checkTsmTree(this.#tsm);
  }
  attest(reportData: Uint8Array): Promise<TeeEvidence> {
    const run = this.#queue.then(() => this.#attest(reportData));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #attest(reportData: Uint8Array): Promise<TeeEvidence> {
    const r = await tsmReport(this.#tsm, reportData);
    if (this.o.type === 'sev') {
      if (!r.auxblob?.length) {
        throw new RuntimeError(
          'INTERNAL',
          'the SEV auxblob is empty: the host does not serve the VCEK certificate table',
        );
      }
      return { tee: 'sev', evidence: r.outblob, collateral: { vcek: toHex(vcekFromCertTable(r.auxblob)) } };
    }
    // Collateral is ~16 KB from the PCCS; a verifier without it cannot check the quote.
    const collateral = await getCollateral(this.o.pccsUrl, Buffer.from(r.outblob)).catch(() => undefined);
    return { tee: 'tdx', evidence: r.outblob, ...(collateral ? { collateral } : {}) };
  }
}
