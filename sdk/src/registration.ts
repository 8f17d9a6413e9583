// Operator registration for a blueprint: idempotent `registerOperator`, or capture-only output of
// what would be sent (REGISTRATION_CAPTURE_ONLY).
import { describeRevert, iTangleAbi } from '@agent-sandbox/contracts';
import type { Logger } from 'pino';
import {
  type Abi,
  type Address,
  BaseError,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
} from 'viem';
import { writeFileAtomic } from './atomic-file.ts';
import { SdkError } from './errors.ts';
import type { OperatorKey } from './keystore.ts';
import { defaultLogger } from './logger.ts';

export interface RegisterOptions {
  httpRpcUrl: string;
  tangle: Address;
  blueprintId: bigint;
  key: OperatorKey;
  /** Where clients reach this operator's API (may be empty). */
  rpcAddress: string;
  /** Blueprint-specific bytes for the BSM's onRegister; selects the 4-argument registerOperator. */
  registrationInputs?: Hex | undefined;
  /** The blueprint manager's errors, to name its refusal inside Tangle's ManagerReverted. */
  managerErrors?: Abi | undefined;
  /** Write the registration payload to this file as JSON instead of sending it. */
  captureOnlyPath?: string | undefined;
  logger?: Logger;
}

export interface RegisterResult {
  status: 'registered' | 'already-registered' | 'captured';
  txHash?: Hex;
}

/** Registers the operator for the blueprint unless it already is. Safe to call on every start. */
export async function register(opts: RegisterOptions): Promise<RegisterResult> {
  const log = (opts.logger ?? defaultLogger()).child({
    blueprintId: `${opts.blueprintId}`,
    operator: opts.key.address,
  });
  const payload = {
    blueprintId: `${opts.blueprintId}`,
    operator: opts.key.address,
    ecdsaPublicKey: opts.key.publicKey,
    rpcAddress: opts.rpcAddress,
    registrationInputs: opts.registrationInputs ?? null,
  };
  if (opts.captureOnlyPath) {
    await writeFileAtomic(opts.captureOnlyPath, `${JSON.stringify(payload, null, 2)}\n`, 0o644);
    log.info({ path: opts.captureOnlyPath }, 'registration payload captured (not sent)');
    return { status: 'captured' };
  }
  const client = createPublicClient({ transport: http(opts.httpRpcUrl) });
  const already = await client
    .readContract({
      address: opts.tangle,
      abi: iTangleAbi,
      functionName: 'isOperatorRegistered',
      args: [opts.blueprintId, opts.key.address],
    })
    .catch((e: unknown) => {
      throw new SdkError(
        'RPC',
        `Cannot read the registration state from ${opts.tangle}: check HTTP_RPC_URL and TANGLE_CONTRACT.`,
        {
          cause: e,
        },
      );
    });
  if (already) {
    log.info('operator already registered for this blueprint');
    return { status: 'already-registered' };
  }
  const chainId = await client.getChainId();
  const wallet = createWalletClient({
    account: opts.key.account,
    transport: http(opts.httpRpcUrl),
    chain: {
      id: chainId,
      name: `chain ${chainId}`,
      nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [opts.httpRpcUrl] } },
    },
  });
  try {
    const { request } =
      opts.registrationInputs === undefined
        ? await client.simulateContract({
            account: opts.key.account,
            address: opts.tangle,
            abi: iTangleAbi,
            functionName: 'registerOperator',
            args: [opts.blueprintId, opts.key.publicKey, opts.rpcAddress],
          })
        : await client.simulateContract({
            account: opts.key.account,
            address: opts.tangle,
            abi: iTangleAbi,
            functionName: 'registerOperator',
            args: [opts.blueprintId, opts.key.publicKey, opts.rpcAddress, opts.registrationInputs],
          });
    // The overloaded registerOperator makes `request` a union viem cannot narrow; it is the simulated request.
    const txHash = await wallet.writeContract(request as never);
    const receipt = await client.waitForTransactionReceipt({ hash: txHash, pollingInterval: 200 });
    if (receipt.status !== 'success') {
      throw new SdkError('REGISTRATION', `registerOperator reverted on chain (tx ${txHash}).`);
    }
    log.info({ tx: txHash }, 'operator registered');
    return { status: 'registered', txHash };
  } catch (e) {
    if (e instanceof SdkError) throw e;
    const rev = describeRevert(e, opts.managerErrors ?? []);
    const decoded = typeof rev === 'object' ? rev : undefined;
    if (decoded?.errorName === 'OperatorAlreadyRegistered' && !decoded.manager) {
      log.info('operator already registered for this blueprint (raced)');
      return { status: 'already-registered' };
    }
    const reason =
      decoded?.text ??
      (rev === 'no-data' ? 'reverted without a reason' : e instanceof BaseError ? e.shortMessage : String(e));
    // Tangle's own staking checks (Operators._registerOperator): not an active operator in the
    // staking contract, or a stake below the blueprint's minimum.
    if (
      !decoded?.manager &&
      (decoded?.errorName === 'OperatorNotActive' || decoded?.errorName === 'InsufficientStake')
    ) {
      const [, required, actual] = decoded.args as [unknown, bigint | undefined, bigint | undefined];
      const what =
        decoded.errorName === 'OperatorNotActive'
          ? `${opts.key.address} is not an active operator in Tangle's staking contract`
          : `${opts.key.address} has ${actual} wei staked, blueprint ${opts.blueprintId} needs ${required}`;
      throw new SdkError(
        'REGISTRATION',
        `registerOperator for blueprint ${opts.blueprintId} was refused: ${what} (${reason}). Stake in the staking contract (MultiAssetDelegation) first, then register again.`,
        {
          cause: e,
          details: {
            reason,
            errorName: decoded.errorName,
            ...(required !== undefined ? { requiredWei: `${required}`, stakedWei: `${actual}` } : {}),
          },
        },
      );
    }
    throw new SdkError(
      'REGISTRATION',
      `registerOperator for blueprint ${opts.blueprintId} failed: ${reason}. ` +
        'Check the blueprint id, that the operator is staked (real deployments) and funded, and the registration inputs.',
      { cause: e, details: { reason } },
    );
  }
}
