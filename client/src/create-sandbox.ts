// createSandbox: submit job 0, follow the assigned operator's provisioning phases live and the
// on-chain result, and return only once the operator reports the sandbox running (seed 000:
// "create() returns a ready environment"), or throw naming the failed phase and its reason.
import type { Address, LocalAccount } from 'viem';
import { type Provision, provisionFailureReason, type Sandbox } from './api-types.ts';
import type { SandboxChain } from './chain.ts';
import { ClientError } from './errors.ts';
import {
  buildCreateRequest,
  type CreateOutput,
  decodeCreateOutput,
  operatorUrlFromResult,
  type SandboxCreateRequestInput,
} from './job-io.ts';
import { OperatorClient } from './operator-client.ts';
import type { OperatorHttpOptions } from './operator-http.ts';
import { sleep } from './sleep.ts';

export type CreateProgress =
  | { stage: 'submitted'; callId: bigint; txHash: `0x${string}` }
  | { stage: 'assigned'; callId: bigint; operator: Address | undefined; operatorUrl: string | undefined }
  | { stage: 'phase'; callId: bigint; phase: string; provision: Provision }
  /** How far the operator's pull of a registry image is (during image_pull; `done` once pulled). */
  | { stage: 'pull'; callId: bigint; pull: PullProgress }
  | { stage: 'result'; callId: bigint; sandboxId: string; operator: Address }
  /** A result from an operator the blueprint did not choose: ignored, the wait goes on. */
  | { stage: 'ignored'; callId: bigint; operator: Address; assigned: Address }
  | { stage: 'running'; callId: bigint; sandbox: Sandbox };

export interface PullProgress {
  image: string;
  layers: number;
  layersDone: number;
  bytesDone: number;
  bytesTotal: number;
  done: boolean;
}

function pullOf(p: Provision): PullProgress | undefined {
  const v = (p as { pull?: unknown }).pull;
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  const n = (k: string) => (typeof o[k] === 'number' ? (o[k] as number) : 0);
  if (typeof o.image !== 'string') return undefined;
  return {
    image: o.image,
    layers: n('layers'),
    layersDone: n('layersDone'),
    bytesDone: n('bytesDone'),
    bytesTotal: n('bytesTotal'),
    done: o.done === true,
  };
}

export interface CreateSandboxOptions {
  chain: SandboxChain;
  /** The owner: submits the job and signs in to the operator. */
  account: LocalAccount;
  request?: SandboxCreateRequestInput;
  /**
   * Where the assigned operator's API is, for live progress before the result names it: a URL,
   * or a lookup by operator address. Default: the `rpcAddress` the operator registered with, if
   * it is an http(s) URL; otherwise progress comes from the chain alone until the result.
   */
  operatorUrl?:
    | string
    | ((operator: Address | undefined) => Promise<string | undefined> | string | undefined);
  onProgress?: (p: CreateProgress) => void;
  /** Called after the client signs in to the operator (e.g. to cache the session). */
  onSession?: (
    session: Parameters<NonNullable<OperatorHttpOptions['onSession']>>[0] & { operatorUrl: string },
  ) => void | Promise<void>;
  fetch?: typeof fetch;
  /**
   * When the sandbox exists but never reports running, delete it (job 1) rather than leave it
   * behind. Default true.
   */
  deleteUnready?: boolean;
  /** Whole create, submit to running. Default 10 minutes. */
  timeoutMs?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

export interface CreatedSandbox {
  sandbox: Sandbox;
  sandboxId: string;
  callId: bigint;
  txHash: `0x${string}`;
  operator: Address;
  operatorUrl: string;
  /** The public result document the operator posted on chain. */
  result: Record<string, unknown>;
  /** Signed in as the owner, ready for exec/prompt. */
  client: OperatorClient;
}

function provisionFailed(callId: bigint, phase: string, reason: string): ClientError {
  return new ClientError('PROVISION_FAILED', `sandbox provisioning failed at ${phase}: ${reason}`, {
    details: { callId: callId.toString(), phase, reason },
  });
}

export async function createSandbox(options: CreateSandboxOptions): Promise<CreatedSandbox> {
  const { chain, account, signal } = options;
  const pollMs = options.pollMs ?? 1000;
  const deadline = Date.now() + (options.timeoutMs ?? 600_000);
  const emit = (p: CreateProgress) => options.onProgress?.(p);
  const request = buildCreateRequest(options.request ?? {});

  const submitted = await chain.submitCreate(request);
  const { callId, txHash } = submitted;
  emit({ stage: 'submitted', callId, txHash });
  const interrupted = () =>
    new ClientError('INTERRUPTED', `stopped following create call ${callId}; the job stays submitted`, {
      details: { callId: callId.toString(), txHash },
    });

  const assigned = submitted.operator ?? (await chain.assignedOperator(callId, submitted.blockNumber));
  let operatorUrl = await resolveOperatorUrl(options, chain, assigned);
  emit({ stage: 'assigned', callId, operator: assigned, operatorUrl });

  // Phase 1: until the result is on chain, watch the operator's public provision progress.
  let lastPhase = 'queued';
  let lastPull = '';
  let warned = false;
  const emitted = new Set<string>();
  let output: (CreateOutput & { operator: Address }) | undefined;
  // Anonymous: phases need no sign-in (the operator shows the failure reason to the owner only;
  // without it the on-chain result carries the public one).
  let progressClient = operatorUrl
    ? new OperatorClient({ baseUrl: operatorUrl, ...fetchOpt(options) })
    : undefined;
  while (!output) {
    if (signal?.aborted) throw interrupted();
    if (progressClient) {
      const p = await progressClient.provision(callId, signal).catch((e) => {
        // Progress is best-effort (the chain result is authoritative): keep going on a blip.
        if (e instanceof ClientError && (e.code === 'NETWORK' || e.code === 'TIMEOUT')) return null;
        throw e;
      });
      // A phase shorter than the poll interval is still reported when the operator sends the
      // history it keeps (`phases`/`history`: [{phase, …}]); phases never repeat in one provision.
      const reading = p ? pullOf(p) : undefined;
      for (const phase of p ? phasesOf(p) : []) {
        if (emitted.has(phase)) continue;
        // The pull's last reading belongs under image_pull: out before any later phase (a poll
        // can see the pull done and the next phase begun at once).
        if (reading && emitted.has('image_pull') && JSON.stringify(reading) !== lastPull) {
          lastPull = JSON.stringify(reading);
          emit({ stage: 'pull', callId, pull: reading });
        }
        emitted.add(phase);
        emit({ stage: 'phase', callId, phase, provision: p! });
        const pull = phase === 'image_pull' ? reading : undefined;
        if (pull) {
          lastPull = JSON.stringify(pull);
          emit({ stage: 'pull', callId, pull });
        }
        if (phase === 'failed') {
          const failedAt = p!.failedPhase ?? p!.failed_phase ?? lastPhase;
          // Without the reason (not shown to this caller), the on-chain result carries it: wait for it.
          if (p!.error === undefined && p!.reason === undefined && p!.message === undefined) {
            lastPhase = failedAt;
            continue;
          }
          throw provisionFailed(callId, failedAt, provisionFailureReason(p!));
        }
        lastPhase = phase;
      }
      // A pull advances within its phase: each new reading is reported once.
      if (reading && JSON.stringify(reading) !== lastPull) {
        lastPull = JSON.stringify(reading);
        emit({ stage: 'pull', callId, pull: reading });
      }
    }
    const chosen = assigned ? { operator: assigned, blueprint: submitted.blueprint } : undefined;
    const r = await chain.findResult(callId, submitted.blockNumber, chosen);
    if (!r && assigned && !warned) {
      const other = (await chain.results(callId, submitted.blockNumber))[0];
      if (other) {
        warned = true;
        emit({ stage: 'ignored', callId, operator: other.operator, assigned });
      }
    }
    if (r) {
      output = { ...decodeCreateOutput(r.output), operator: r.operator };
      break;
    }
    if (Date.now() >= deadline) {
      throw new ClientError(
        'TIMEOUT',
        `create call ${callId} has no result yet (last phase: ${lastPhase}); is the operator running?`,
        {
          details: { callId: callId.toString(), phase: lastPhase },
        },
      );
    }
    await sleep(pollMs, signal);
  }

  if (!output.sandboxId) {
    const phase = typeof output.json.phase === 'string' ? output.json.phase : lastPhase;
    const reason = typeof output.json.error === 'string' ? output.json.error : 'the operator gave no reason';
    throw provisionFailed(callId, phase, reason);
  }
  emit({ stage: 'result', callId, sandboxId: output.sandboxId, operator: output.operator });
  operatorUrl ??= operatorUrlFromResult(output.json);
  if (!operatorUrl) {
    throw new ClientError(
      'REMOTE',
      `sandbox ${output.sandboxId} was created but its operator's API URL is unknown; pass --operator to reach it`,
      { details: { sandboxId: output.sandboxId, callId: callId.toString() } },
    );
  }

  // Phase 2: read the platform's answer back; only `running` is a finished create.
  const client = new OperatorClient({
    baseUrl: operatorUrl,
    account,
    // The sandbox was created on this chain: its operator's sign-in message must name it.
    chainId: () => chain.publicClient.getChainId(),
    ...fetchOpt(options),
    ...(options.onSession
      ? { onSession: (sess) => options.onSession?.({ ...sess, operatorUrl: operatorUrl as string }) }
      : {}),
  });
  progressClient = undefined;
  for (;;) {
    if (signal?.aborted) throw interrupted();
    const sandbox = await client.get(output.sandboxId);
    if (sandbox?.state === 'running') {
      emit({ stage: 'running', callId, sandbox });
      return {
        sandbox,
        sandboxId: output.sandboxId,
        callId,
        txHash,
        operator: output.operator,
        operatorUrl,
        result: output.json,
        client,
      };
    }
    if (sandbox && ['failed', 'stopped', 'expired', 'deleted'].includes(sandbox.state)) {
      throw await handBack(
        options,
        output.sandboxId,
        provisionFailed(callId, 'ready', `the sandbox reports ${sandbox.state}, not running`),
      );
    }
    if (Date.now() >= deadline) {
      throw await handBack(
        options,
        output.sandboxId,
        new ClientError(
          'TIMEOUT',
          `sandbox ${output.sandboxId} ${sandbox ? `is still ${sandbox.state}` : 'is not visible on its operator'} after the wait`,
          { details: { sandboxId: output.sandboxId, callId: callId.toString() } },
        ),
      );
    }
    await sleep(pollMs, signal);
  }
}

/**
 * A sandbox that exists on chain but never reached running is not handed to the caller: delete
 * it (job 1, never a stop, which would keep its storage) unless told not to, and say so.
 */
async function handBack(
  options: CreateSandboxOptions,
  sandboxId: string,
  err: ClientError,
): Promise<ClientError> {
  const details: Record<string, unknown> = { ...(err.details ?? {}), sandboxId };
  let note: string;
  if (options.deleteUnready === false) {
    note = `it was kept: inspect it with \`agent-sandbox get ${sandboxId}\` and delete it when done`;
  } else {
    try {
      const del = await options.chain.submitDelete(sandboxId);
      details.deleteCallId = del.callId.toString();
      note = `delete job ${del.callId} was submitted for it`;
    } catch (e) {
      note = `deleting it failed (${(e as Error).message}); delete it with \`agent-sandbox delete ${sandboxId}\``;
    }
  }
  return new ClientError(err.code, `${err.message}; ${note}`, {
    details,
    ...(err.status === undefined ? {} : { status: err.status }),
    exitCode: err.exitCode,
  });
}

/** The phases a provision record shows, oldest first, ending with the current one. */
function phasesOf(p: Provision): string[] {
  const history = Array.isArray(p.phases) ? p.phases : Array.isArray(p.history) ? p.history : [];
  const names = history
    .map((h) => (h && typeof h === 'object' ? (h as { phase?: unknown }).phase : h))
    .filter((x): x is string => typeof x === 'string');
  // A failure is reported from the record itself (with its reason), so it goes last.
  return [...names.filter((n) => n !== 'failed'), p.phase];
}

function fetchOpt(options: CreateSandboxOptions): { fetch?: typeof fetch } {
  return options.fetch ? { fetch: options.fetch } : {};
}

async function resolveOperatorUrl(
  options: CreateSandboxOptions,
  chain: SandboxChain,
  operator: Address | undefined,
): Promise<string | undefined> {
  if (typeof options.operatorUrl === 'string') return options.operatorUrl;
  if (typeof options.operatorUrl === 'function') return (await options.operatorUrl(operator)) ?? undefined;
  if (!operator) return undefined;
  const rpc = await chain.operatorRpcAddress(operator).catch(() => undefined);
  return rpc && /^https?:\/\//.test(rpc) ? rpc : undefined;
}
