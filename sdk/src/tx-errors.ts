// How result-transaction failures are told apart: decoded Tangle reverts, nonce and fee refusals.
import { BaseError, ContractFunctionRevertedError } from 'viem';

export const NONCE_ERROR =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already imported/i;
export const FEE_ERROR =
  /fee cap|less than (the )?block base fee|max fee per gas|feecap|transaction underpriced/i;

/** Reverts that mean "nothing left to do for this call": someone completed it, or we already answered. */
export const DONE_ERRORS = new Set(['JobAlreadyCompleted', 'ResultAlreadySubmitted']);

/** The decoded custom error of a revert; 'no-data' for a bare revert; undefined when it is no revert. */
export function revertOf(
  e: unknown,
): { errorName: string; args: readonly unknown[] } | 'no-data' | undefined {
  if (!(e instanceof BaseError)) return undefined;
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (!r) return undefined;
  return r.data ? { errorName: r.data.errorName, args: r.data.args ?? [] } : 'no-data';
}

export const messageOf = (e: unknown): string =>
  e instanceof BaseError ? `${e.shortMessage} ${e.details ?? ''}` : String((e as Error)?.message ?? e);
