// Choosing and opening the TEE backend from the operator's validated TEE settings (TEE_BACKEND,
// read once at start). Unknown or unconfigured values fail with what to set; the backend's own
// check (e.g. the configfs-tsm tree and provider) runs before the operator takes work.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TrustAnchors } from '@agent-sandbox/attestation';
import { productionAnchors } from '@agent-sandbox/attestation';
import { RuntimeError } from '../errors.ts';
import type { TeeBackend } from './backend.ts';
import { DirectTeeBackend } from './direct.ts';

export interface TeeSettings {
  backend: string | undefined;
  directType?: string | undefined;
  tsmRoot: string;
  pccsUrl: string;
  /** TEST_MODE only: a directory with ark.pem and ask.pem of a test SEV PKI. */
  testAnchorsDir?: string | undefined;
  testMode: boolean;
}

export async function openTeeBackend(s: TeeSettings): Promise<TeeBackend> {
  let backend: TeeBackend;
  switch (s.backend) {
    case 'direct': {
      if (s.directType !== 'tdx' && s.directType !== 'sev') {
        throw new RuntimeError(
          'CONFIG_INVALID',
          'TEE_BACKEND=direct needs TEE_DIRECT_TYPE=tdx or sev (the kind of confidential VM this operator runs on)',
        );
      }
      backend = new DirectTeeBackend({ type: s.directType, root: s.tsmRoot, pccsUrl: s.pccsUrl });
      break;
    }
    case 'phala':
      throw new RuntimeError(
        'CONFIG_INVALID',
        'TEE_BACKEND=phala is not usable in this build: its Phala Cloud and dstack clients exist, but the sandbox ' +
          'side that must hold the sealing key inside the CVM does not (README, TEE-instance mode); use direct',
      );
    case undefined:
    case '':
      throw new RuntimeError('CONFIG_INVALID', 'tee-instance mode needs TEE_BACKEND (direct)');
    default:
      throw new RuntimeError('CONFIG_INVALID', `TEE_BACKEND=${s.backend} is unknown; use direct`);
  }
  await backend.check();
  return backend;
}

/** Production anchors, or (TEST_MODE only) a test SEV PKI's ARK/ASK in place of AMD's. */
export async function teeTrustAnchors(
  s: Pick<TeeSettings, 'testAnchorsDir' | 'testMode'>,
): Promise<TrustAnchors> {
  if (!s.testAnchorsDir) return productionAnchors();
  if (!s.testMode) {
    throw new RuntimeError(
      'CONFIG_INVALID',
      'TEE_TEST_ANCHORS_DIR is accepted only with TEST_MODE=true: test anchors would trust evidence no TEE signed',
    );
  }
  return {
    ...productionAnchors(),
    sev: {
      ark: await readFile(join(s.testAnchorsDir, 'ark.pem'), 'utf8'),
      ask: await readFile(join(s.testAnchorsDir, 'ask.pem'), 'utf8'),
    },
  };
}
