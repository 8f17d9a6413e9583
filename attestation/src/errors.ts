// The attestation package's one error type: a code the caller can match, a message that says
// what failed and, where it helps, what to do.
import { BaseError } from '@agent-sandbox/errors';

export type AttestationErrorCode =
  | 'BAD_INPUT' // malformed evidence, collateral, document or parameter
  | 'SIGNATURE' // a signature or certificate chain does not verify
  | 'EXPIRED' // outside a validity window at the given `now`
  | 'POLICY' // verified, but refused by policy (TCB status, debug, report type, VMPL)
  | 'BINDING' // report_data does not commit to (ctx, pubkey, nonce)
  | 'MEASUREMENT' // measurements not in the caller's allow-list
  | 'SEALED' // a sealed body could not be opened (deliberately vague)
  | 'CHANNEL' // an owner-channel message does not open, is replayed, stale, reordered or cut short
  | 'OWNER'; // the owner-channel request is not signed by the owner the enclave enforces

export class AttestationError extends BaseError<AttestationErrorCode> {
  override readonly name = 'AttestationError';
  constructor(code: AttestationErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
