// The CLI's on-chain commands: `create` (job 0, followed live until running) and `delete` (job 1).
import { readFile } from 'node:fs/promises';
import { createSandbox } from '../create-sandbox.ts';
import { ClientError } from '../errors.ts';
import type { SandboxCreateRequestInput } from '../job-io.ts';
import type { Command } from './commands.ts';
import { parsePairs } from './commands.ts';
import type { CliContext } from './context.ts';

const TEE_TYPES: Record<string, number> = { tdx: 1, nitro: 2, sev: 3 };

function uint(ctx: CliContext, flag: string): string | undefined {
  const v = ctx.args.options[flag];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v))
    throw new ClientError('USAGE', `--${flag} must be a whole number, got "${v}"`);
  return v;
}

/**
 * capabilities_json: the create options (the operator's blueprint-lib/src/create-options.ts) from
 * --capabilities-json, with --shape, --delete-after-stopped … set over it.
 */
function createOptionsFromFlags(ctx: CliContext, raw: string | undefined): string | undefined {
  const o = ctx.args.options;
  const set: Record<string, unknown> = {};
  if (typeof o.shape === 'string') set.shape = o.shape;
  if (o['no-agent'] === true) set.agent = false;
  if (typeof o.runtime === 'string') {
    if (o.runtime !== 'runc' && o.runtime !== 'runsc') {
      throw new ClientError('USAGE', `--runtime must be runc or runsc, got "${o.runtime}"`);
    }
    set.runtime = o.runtime;
  }
  // `branch <id>` is `create --from-sandbox <id>`.
  const fromSandbox = ctx.args.command === 'branch' ? ctx.args.positionals[0] : o['from-sandbox'];
  if (typeof fromSandbox === 'string') set.from_sandbox = fromSandbox;
  if (typeof o['from-snapshot'] === 'string') set.from_snapshot = o['from-snapshot'];
  if (set.from_sandbox !== undefined && set.from_snapshot !== undefined) {
    throw new ClientError('USAGE', 'name one source: --from-sandbox (or branch <id>) or --from-snapshot');
  }
  const network = networkFromFlags(ctx);
  if (network) set.network = network;
  const after = uint(ctx, 'delete-after-stopped');
  if (after !== undefined) set.delete_after_stopped_seconds = Number(after);
  if (Object.keys(set).length === 0) return raw;
  let base: unknown = {};
  if (raw !== undefined && raw.trim() !== '') {
    try {
      base = JSON.parse(raw);
    } catch {
      throw new ClientError('USAGE', '--capabilities-json is not JSON');
    }
  }
  if (typeof base !== 'object' || base === null || Array.isArray(base)) {
    throw new ClientError(
      'USAGE',
      '--capabilities-json must be a JSON object to combine it with --shape, --network, --from-sandbox and the like',
    );
  }
  return JSON.stringify({ ...base, ...set });
}

/** --network / --allow-domain / --include-implicit-domains → the `network` create option. */
function networkFromFlags(ctx: CliContext): Record<string, unknown> | undefined {
  const o = ctx.args.options;
  const domains = Array.isArray(o['allow-domain']) ? (o['allow-domain'] as string[]) : [];
  const implicit = o['include-implicit-domains'] === true;
  const mode =
    typeof o.network === 'string' ? o.network : domains.length > 0 || implicit ? 'strict' : undefined;
  if (mode === undefined) return undefined;
  if (mode !== 'default' && mode !== 'strict') {
    throw new ClientError('USAGE', `--network must be default or strict, got "${mode}"`);
  }
  if (implicit && mode === 'default') {
    throw new ClientError(
      'USAGE',
      '--include-implicit-domains goes with --network strict (default already includes them)',
    );
  }
  return {
    mode,
    ...(domains.length ? { allow_domains: domains } : {}),
    ...(implicit ? { include_implicit_domains: true } : {}),
  };
}

/** Builds the job 0 request from flags (validation of the whole happens in buildCreateRequest). */
export async function createRequestFromFlags(ctx: CliContext): Promise<SandboxCreateRequestInput> {
  const o = ctx.args.options;
  const req: SandboxCreateRequestInput = {};
  const str = (flag: string) => (typeof o[flag] === 'string' ? (o[flag] as string) : undefined);
  if (str('name') !== undefined) req.name = str('name')!;
  if (str('image') !== undefined) req.image = str('image')!;
  if (str('stack') !== undefined) req.stack = str('stack')!;
  if (str('agent') !== undefined) req.agent_identifier = str('agent')!;
  let env: Record<string, unknown> = {};
  if (str('env-json') !== undefined) {
    try {
      env = JSON.parse(str('env-json')!);
    } catch {
      throw new ClientError('USAGE', '--env-json is not JSON');
    }
  }
  if (o.env) env = { ...env, ...parsePairs(o.env as string[], '--env') };
  if (Object.keys(env).length) req.env_json = JSON.stringify(env);
  if (str('metadata-json') !== undefined) req.metadata_json = str('metadata-json')!;
  const options = createOptionsFromFlags(ctx, str('capabilities-json'));
  if (options !== undefined) req.capabilities_json = options;
  const ssh = str('ssh-key');
  if (ssh !== undefined) {
    req.ssh_enabled = true;
    req.ssh_public_key = /^(ssh-|ecdsa-)/.test(ssh)
      ? ssh
      : (
          await readFile(ssh, 'utf8').catch(() => {
            throw new ClientError('USAGE', `--ssh-key: "${ssh}" is neither a public key nor a readable file`);
          })
        ).trim();
  }
  if (o['no-web-terminal']) req.web_terminal_enabled = false;
  const nums: Array<[string, keyof SandboxCreateRequestInput]> = [
    ['lifetime', 'max_lifetime_seconds'],
    ['idle-timeout', 'idle_timeout_seconds'],
    ['cpu', 'cpu_cores'],
    ['memory', 'memory_mb'],
    ['disk', 'disk_gb'],
  ];
  for (const [flag, field] of nums) {
    const v = uint(ctx, flag);
    if (v !== undefined) (req as Record<string, unknown>)[field] = BigInt(v);
  }
  const tee = str('tee');
  if (tee !== undefined) {
    const t = TEE_TYPES[tee.toLowerCase()];
    if (t === undefined) throw new ClientError('USAGE', `--tee must be tdx, nitro or sev, got "${tee}"`);
    req.tee_required = true;
    req.tee_type = t;
  }
  if (str('attestation-nonce') !== undefined) req.attestation_nonce = str('attestation-nonce')!;
  return req;
}

export const create: Command = async (ctx) => {
  const request = await createRequestFromFlags(ctx);
  const account = await ctx.requireAccount('create');
  const chain = await ctx.chain();
  const explicit = ctx.args.globals.operator ?? ctx.io.env.AGENT_SANDBOX_OPERATOR;
  const devnet = await ctx.devnet();
  const timeout = uint(ctx, 'timeout');
  let callId: bigint | undefined;
  const created = await createSandbox({
    chain,
    account,
    request,
    ...(typeof explicit === 'string' && explicit
      ? { operatorUrl: explicit }
      : devnet?.operatorUrls[0]
        ? { operatorUrl: devnet.operatorUrls[0] }
        : {}),
    signal: ctx.io.signal,
    pollMs: 500,
    deleteUnready: ctx.args.options['keep-unready'] !== true,
    ...(timeout ? { timeoutMs: Number(timeout) * 1000 } : {}),
    ...(ctx.io.fetch ? { fetch: ctx.io.fetch } : {}),
    onSession: (s) =>
      ctx.cache.put({ operator: s.operatorUrl, address: s.address, token: s.token, expiresAt: s.expiresAt }),
    onProgress: (p) => {
      switch (p.stage) {
        case 'submitted':
          callId = p.callId;
          ctx.note(`job submitted: call ${p.callId} (tx ${p.txHash})`);
          break;
        case 'assigned':
          ctx.note(
            `assigned operator ${p.operator ?? '(unknown)'}${p.operatorUrl ? ` at ${p.operatorUrl}` : ''}`,
          );
          break;
        case 'phase':
          ctx.note(`  ${p.phase}`);
          break;
        case 'pull': {
          const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
          const { image, layers, layersDone, bytesDone, bytesTotal, done } = p.pull;
          ctx.note(
            done
              ? `    pulled ${image}: ${layers} layers, ${mb(bytesTotal)} MB`
              : `    pulling ${image}: ${layersDone}/${layers} layers, ${mb(bytesDone)}/${mb(bytesTotal)} MB`,
          );
          break;
        }
        case 'result':
          ctx.note(`result on chain: sandbox ${p.sandboxId}`);
          break;
        case 'ignored':
          ctx.note(
            `operator ${p.operator} answered, but the blueprint assigned ${p.assigned}: its result is ignored; waiting for ${p.assigned}`,
          );
          break;
        case 'running':
          ctx.note('  running');
          break;
      }
    },
  }).catch((e) => {
    if (callId !== undefined && e instanceof ClientError && !e.details?.callId) {
      throw new ClientError(e.code, `${e.message} (create call ${callId})`, {
        ...(e.status === undefined ? {} : { status: e.status }),
        details: { ...(e.details ?? {}), callId: callId.toString() },
        exitCode: e.exitCode,
      });
    }
    throw e;
  });
  await ctx.cache.rememberSandbox(created.sandboxId, created.operatorUrl, created.callId);
  if (ctx.json) {
    ctx.printJson({
      sandbox: created.sandbox,
      call_id: created.callId,
      tx_hash: created.txHash,
      operator: created.operator,
      operator_url: created.operatorUrl,
      result: created.result,
    });
  } else {
    ctx.out(created.sandboxId);
  }
  return 0;
};

export const deleteSandbox: Command = async (ctx) => {
  const id = ctx.args.positionals[0]!;
  await ctx.requireAccount('delete');
  const chain = await ctx.chain();
  const job = await chain.submitDelete(id);
  ctx.note(`delete job submitted: call ${job.callId} (tx ${job.txHash})`);
  if (ctx.args.options['no-wait']) {
    if (ctx.json) ctx.printJson({ sandbox_id: id, call_id: job.callId, tx_hash: job.txHash });
    return 0;
  }
  const timeout = uint(ctx, 'timeout');
  const result = await chain.waitForDeleteResult(job.callId, {
    fromBlock: job.blockNumber,
    chosen: job.operator ? { operator: job.operator, blueprint: job.blueprint } : undefined,
    timeoutMs: timeout ? Number(timeout) * 1000 : 300_000,
    signal: ctx.io.signal,
  });
  if (typeof result.error === 'string') {
    throw new ClientError('REMOTE', `operator could not delete ${id}: ${result.error}`, {
      details: { callId: job.callId.toString() },
    });
  }
  await ctx.cache.forgetSandbox(id);
  if (ctx.json) ctx.printJson({ sandbox_id: id, call_id: job.callId, tx_hash: job.txHash, result });
  else ctx.out(`deleted ${id}`);
  return 0;
};

/** `branch <id>`: the create job with from_sandbox (createOptionsFromFlags reads the id). */
export const branch: Command = (ctx) => create(ctx);
