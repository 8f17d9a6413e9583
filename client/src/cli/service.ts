// `agent-sandbox service`: the user's side of a service on Tangle — request it (an instance
// service carries its sandbox request as the config; a cloud service, the one many operators
// serve as a fleet, carries none), wait until its operators approved it, terminate it.
import {
  type ChainContext,
  isSdkError,
  requestService,
  terminateService,
  waitForServiceActivation,
} from '@agent-sandbox/sdk';
import { type Address, isAddress, parseEther } from 'viem';
import { ClientError, ExitCode } from '../errors.ts';
import { buildCreateRequest, encodeCreateInput } from '../job-io.ts';
import { COMMANDS } from './args.ts';
import type { Command } from './commands.ts';
import type { CliContext } from './context.ts';
import { createRequestFromFlags } from './jobs.ts';

const MODES = { instance: 'instance', 'tee-instance': 'teeInstance', cloud: 'cloud' } as const;
/** The sandbox flags of `create`: an instance request's config; a cloud service takes none. */
const sandboxFlags = () =>
  Object.keys(COMMANDS['create']?.options ?? {}).filter((k) => !['timeout', 'keep-unready'].includes(k));

function str(ctx: CliContext, flag: string): string | undefined {
  const v = ctx.args.options[flag];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function whole(ctx: CliContext, flag: string): bigint | undefined {
  const v = str(ctx, flag);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new ClientError('USAGE', `--${flag} must be a whole number, got "${v}"`);
  return BigInt(v);
}

function addresses(ctx: CliContext, flag: string): Address[] | undefined {
  const v = str(ctx, flag);
  if (v === undefined) return undefined;
  const list = v
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  for (const a of list)
    if (!isAddress(a, { strict: false }))
      throw new ClientError('USAGE', `--${flag}: "${a}" is not an address`);
  return list as Address[];
}

async function chainContext(ctx: CliContext, write: boolean): Promise<{ c: ChainContext; tangle: Address }> {
  const devnet = await ctx.devnet();
  const rpcUrl =
    (ctx.args.globals.rpc as string | undefined) ?? ctx.io.env.AGENT_SANDBOX_RPC ?? devnet?.rpcUrl;
  const tangle =
    (ctx.args.globals.tangle as string | undefined) ?? ctx.io.env.AGENT_SANDBOX_TANGLE ?? devnet?.tangle;
  if (!rpcUrl || !tangle)
    throw new ClientError('USAGE', 'service needs --rpc and --tangle (or --devnet FILE)');
  if (!isAddress(tangle, { strict: false }))
    throw new ClientError('USAGE', `--tangle "${tangle}" is not an address`);
  const account = write ? await ctx.requireAccount('service') : await ctx.account();
  return {
    c: {
      rpcUrl,
      account,
      progress: (line) => ctx.note(line),
      pollingIntervalMs: devnet ? 200 : 2000,
    },
    tangle: tangle as Address,
  };
}

/** SdkError → ClientError with the CLI's exit codes (a refused or rejected request is a chain error). */
function mapped(e: unknown): never {
  if (isSdkError(e, 'SERVICE_REQUEST')) {
    const pending = e.details?.['state'] === 'pending';
    throw new ClientError(pending ? 'TIMEOUT' : 'CHAIN', e.message, {
      exitCode: pending ? ExitCode.REMOTE : ExitCode.CHAIN,
      details: e.details ?? {},
      cause: e,
    });
  }
  if (isSdkError(e)) throw new ClientError('CHAIN', e.message, { exitCode: ExitCode.CHAIN, cause: e });
  throw e;
}

async function wait(
  ctx: CliContext,
  c: ChainContext,
  tangle: Address,
  requestId: bigint,
  fromBlock?: bigint,
) {
  const timeout = whole(ctx, 'timeout') ?? 600n;
  ctx.note(`waiting for the operators to approve request ${requestId} (up to ${timeout} s)`);
  const r = await waitForServiceActivation(c, tangle, requestId, {
    timeoutMs: Number(timeout) * 1000,
    fromBlock,
    onPending: (q) =>
      ctx.note(
        `  pending: ${q.approvedBy.length} of ${q.call?.operators.length ?? '?'} operator(s) approved`,
      ),
  }).catch(mapped);
  ctx.note(`service ${r.serviceId} is active`);
  return r;
}

export const service: Command = async (ctx) => {
  const [action, target] = ctx.args.positionals;
  if (action === 'request') {
    const mode = str(ctx, 'mode') ?? 'instance';
    if (!(mode in MODES))
      throw new ClientError('USAGE', `--mode must be instance, tee-instance or cloud, got "${mode}"`);
    const devnet = await ctx.devnet();
    const blueprints = (devnet?.raw as { blueprints?: Record<string, number> } | undefined)?.blueprints;
    const blueprintId =
      whole(ctx, 'blueprint-id') ??
      (blueprints ? BigInt(blueprints[MODES[mode as keyof typeof MODES]] ?? -1) : undefined);
    if (blueprintId === undefined || blueprintId < 0n)
      throw new ClientError('USAGE', 'service request needs --blueprint-id (or --devnet FILE)');
    const operators =
      addresses(ctx, 'operators') ??
      (devnet?.accounts['operator1'] ? [devnet.accounts['operator1'].address] : undefined);
    if (!operators?.length) throw new ClientError('USAGE', 'service request needs --operators 0x…,…');
    let config: `0x${string}` = '0x';
    if (mode === 'cloud') {
      const given = sandboxFlags().filter((f) => ctx.args.options[f] !== undefined);
      if (given.length)
        throw new ClientError(
          'USAGE',
          `a cloud service takes no sandbox request (${given.map((f) => `--${f}`).join(', ')}): request the service, then create sandboxes in it with \`agent-sandbox create --service <id>\``,
        );
    } else {
      const input = await createRequestFromFlags(ctx);
      if (mode === 'tee-instance' && !input.tee_required) {
        input.tee_required = true;
        input.tee_type ??= 1;
      }
      config = encodeCreateInput(buildCreateRequest(input));
    }
    let payment = 0n;
    const p = str(ctx, 'payment');
    if (p !== undefined) {
      try {
        payment = parseEther(p);
      } catch {
        throw new ClientError('USAGE', `--payment must be an amount of ether, got "${p}"`);
      }
    }
    const { c, tangle } = await chainContext(ctx, true);
    const sent = await requestService(c, tangle, {
      blueprintId,
      operators,
      config,
      permittedCallers: addresses(ctx, 'permit') ?? [],
      ttl: whole(ctx, 'ttl') ?? 0n,
      paymentAmount: payment,
      confidentiality: mode === 'tee-instance' ? 1 : 0,
    }).catch(mapped);
    ctx.note(`service request ${sent.requestId} sent (tx ${sent.txHash})`);
    if (ctx.args.options['no-wait']) {
      if (ctx.json) ctx.printJson({ requestId: sent.requestId, txHash: sent.txHash, state: 'pending' });
      else ctx.out(`${sent.requestId}`);
      return ExitCode.OK;
    }
    const r = await wait(ctx, c, tangle, sent.requestId, sent.blockNumber);
    if (ctx.json)
      ctx.printJson({ requestId: sent.requestId, serviceId: r.serviceId, operators, txHash: sent.txHash });
    else ctx.out(`${r.serviceId}`);
    return ExitCode.OK;
  }
  if (action === 'wait' || action === 'terminate') {
    if (!target || !/^\d+$/.test(target)) {
      throw new ClientError(
        'USAGE',
        `service ${action}: missing <${action === 'wait' ? 'request' : 'service'}-id>`,
      );
    }
    const { c, tangle } = await chainContext(ctx, action === 'terminate');
    if (action === 'wait') {
      const r = await wait(ctx, c, tangle, BigInt(target), whole(ctx, 'from-block'));
      if (ctx.json) ctx.printJson({ requestId: BigInt(target), serviceId: r.serviceId });
      else ctx.out(`${r.serviceId}`);
      return ExitCode.OK;
    }
    const r = await terminateService(c, tangle, BigInt(target)).catch(mapped);
    if (ctx.json) ctx.printJson({ serviceId: BigInt(target), terminated: true, txHash: r.txHash });
    else ctx.out(`service ${target} terminated`);
    return ExitCode.OK;
  }
  throw new ClientError('USAGE', 'service: expected request, wait <request-id> or terminate <service-id>');
};
