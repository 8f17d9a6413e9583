// The devnet scripts' one error type (stable code, message saying what to do) and shared paths.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseError } from '@agent-sandbox/errors';

export type DevnetErrorCode =
  | 'ANVIL_MISSING'
  | 'ANVIL_EXITED'
  | 'ANVIL_TIMEOUT'
  | 'PORT_IN_USE'
  | 'CONTRACTS_MISSING'
  | 'DEPLOY_FAILED'
  | 'STATE_INVALID'
  | 'TANGLE_STATE_MISSING';

export class DevnetError extends BaseError<DevnetErrorCode> {
  override readonly name = 'DevnetError';
  constructor(code: DevnetErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** The repository root (devnet/ is one level down). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where `up` writes the devnet's description unless told otherwise. */
export const DEFAULT_STATE_FILE = resolve(REPO_ROOT, '.devnet/devnet.json');
