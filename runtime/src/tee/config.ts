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
import { PhalaTeeBackend } from './phala/backend.ts';
import { PhalaCloudApi } from './phala/cloud-api.ts';

export interface TeeSettings {
  backend: string | undefined;
  directType?: string | undefined;
  tsmRoot: string;
  pccsUrl: string;
  /** TEST_MODE only: a directory with ark.pem and ask.pem of a test SEV PKI. */
  testAnchorsDir?: string | undefined;
  testMode: boolean;
  /** TEE_BACKEND=phala: PHALA_API_KEY, PHALA_API_ENDPOINT, PHALA_SANDBOX_IMAGE. */
  phala?: {
    apiKey?: string | undefined;
    endpoint?: string | undefined;
    image?: string | undefined;
    pollMs?: number;
  };
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
    case 'phala': {
      const p = s.phala ?? {};
      if (!p.apiKey) throw new RuntimeError('CONFIG_INVALID', 'TEE_BACKEND=phala needs PHALA_API_KEY');
      if (!p.image) {
        throw new RuntimeError(
          'CONFIG_INVALID',
          'TEE_BACKEND=phala needs PHALA_SANDBOX_IMAGE: the sandbox image the CVM pulls, pinned by digest',
        );
      }
      backend = new PhalaTeeBackend({
        api: new PhalaCloudApi({ apiKey: p.apiKey, ...(p.endpoint ? { endpoint: p.endpoint } : {}) }),
        image: p.image,
        pccsUrl: s.pccsUrl,
        ...(p.pollMs ? { pollMs: p.pollMs } : {}),
      });
      break;
    }
    case undefined:
    case '':
      throw new RuntimeError('CONFIG_INVALID', 'tee-instance mode needs TEE_BACKEND (direct or phala)');
    default:
      throw new RuntimeError('CONFIG_INVALID', `TEE_BACKEND=${s.backend} is unknown; use direct or phala`);
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
