// `agent-sandbox tee verify`, `secrets set --sealed` and `--tee` on exec/files/prompt/terminal:
// resolve the TEE-instance target (chain, blueprint, service, operator), the user's own
// measurement allow-list and anchors, then verify (and seal, or open the owner channel) with
// client/src/tee.ts. Nothing is sent unless both attestations verify.
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type MeasurementEntry,
  parseAllowList,
  productionAnchors,
  type TrustAnchors,
} from '@agent-sandbox/attestation';
import { type Address, isAddress } from 'viem';
import { ClientError } from '../errors.ts';
import { ownerChannel, sendSealedSecrets, type TeeTarget, verifyTeeInstance } from '../tee.ts';
import { type SandboxOps, TeeSandbox } from '../tee-sandbox.ts';
import type { Command } from './commands.ts';
import type { CliContext } from './context.ts';

const str = (ctx: CliContext, name: string): string | undefined => {
  const v = ctx.args.options[name] ?? ctx.args.globals[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

function allowList(ctx: CliContext): MeasurementEntry[] {
  const parts: string[] = [];
  const flags = ctx.args.options['measurement'];
  if (Array.isArray(flags)) parts.push(...flags);
  const envList = ctx.io.env.AGENT_SANDBOX_TEE_MEASUREMENTS;
  if (envList) parts.push(envList);
  const entries = parts.length ? parseAllowList(parts.join(',')) : [];
  const file = str(ctx, 'measurements-file');
  if (file) entries.push(...parseAllowList(readFileSync(file, 'utf8')));
  if (entries.length === 0) {
    throw new ClientError(
      'USAGE',
      'give the measurements you trust (--measurement HEX, --measurements-file or AGENT_SANDBOX_TEE_MEASUREMENTS): ' +
        'a verifier that accepts any measurement accepts any code',
    );
  }
  return entries;
}

function minTcb(ctx: CliContext) {
  const v = str(ctx, 'sev-min-tcb');
  if (!v) return {};
  const m = /^(\d{1,3}):(\d{1,3}):(\d{1,3}):(\d{1,3})$/.exec(v);
  if (!m) throw new ClientError('USAGE', '--sev-min-tcb is BOOTLOADER:TEE:SNP:MICROCODE, four numbers 0-255');
  const [bootloader, tee, snp, microcode] = m.slice(1).map(Number) as [number, number, number, number];
  return { sevMinTcb: { bootloader, tee, snp, microcode } };
}

function anchors(ctx: CliContext): TrustAnchors | undefined {
  const dir = str(ctx, 'test-anchors');
  if (!dir) return undefined;
  if (!/^(1|true|yes|on)$/i.test(ctx.io.env.AGENT_SANDBOX_TEST_MODE ?? '')) {
    throw new ClientError(
      'USAGE',
      '--test-anchors trusts evidence no TEE signed; it needs AGENT_SANDBOX_TEST_MODE=true',
    );
  }
  // A test SEV PKI (ark.pem + ask.pem) and/or a test Intel root (intel-root.pem); the rest stay production.
  const read = (f: string) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8') : undefined);
  const [ark, ask, intel] = [read('ark.pem'), read('ask.pem'), read('intel-root.pem')];
  if (!(ark && ask) && !intel) {
    throw new ClientError(
      'USAGE',
      `--test-anchors ${dir} holds neither ark.pem + ask.pem nor intel-root.pem`,
    );
  }
  const prod = productionAnchors();
  return {
    ...prod,
    ...(ark && ask ? { sev: { ark, ask } } : {}),
    ...(intel ? { intelRootDer: new Uint8Array(new X509Certificate(intel).raw) } : {}),
  };
}

async function target(ctx: CliContext) {
  const devnet = await ctx.devnet();
  const raw = devnet?.raw as
    | { contracts?: Record<string, unknown>; services?: Record<string, bigint> }
    | undefined;
  const rpcUrl = str(ctx, 'rpc') ?? ctx.io.env.AGENT_SANDBOX_RPC ?? devnet?.rpcUrl;
  const blueprint =
    str(ctx, 'blueprint') ??
    ctx.io.env.AGENT_SANDBOX_TEE_BLUEPRINT ??
    (raw?.contracts?.teeInstance as string);
  const serviceText = str(ctx, 'service') ?? ctx.io.env.AGENT_SANDBOX_SERVICE;
  const serviceId = serviceText !== undefined ? BigInt(serviceText) : raw?.services?.teeInstance;
  if (!rpcUrl || !blueprint || !isAddress(blueprint, { strict: false }) || serviceId === undefined) {
    throw new ClientError(
      'USAGE',
      'tee commands need --rpc, --blueprint (the TEE-instance contract) and --service (or --devnet)',
    );
  }
  const client = await ctx.operator();
  let operator = str(ctx, 'operator-address');
  if (!operator) {
    const caps = await client.capabilities();
    operator = typeof caps.operator === 'string' ? caps.operator : undefined;
  }
  if (!operator || !isAddress(operator, { strict: false })) {
    throw new ClientError(
      'USAGE',
      'which operator address? pass --operator-address (its /api/capabilities has none)',
    );
  }
  const account = await ctx.account();
  if (!account) {
    throw new ClientError(
      'USAGE',
      'tee commands need your wallet (AGENT_SANDBOX_PRIVATE_KEY, --keystore or --devnet): the enclave takes orders only from the service owner',
    );
  }
  const fromBlock = str(ctx, 'from-block');
  if (fromBlock !== undefined && !/^\d+$/.test(fromBlock))
    throw new ClientError('USAGE', '--from-block must be a block number');
  const t: TeeTarget = {
    rpcUrl,
    blueprint: blueprint as Address,
    serviceId,
    operator: operator as Address,
    owner: account.address,
    ...(fromBlock ? { fromBlock: BigInt(fromBlock) } : {}),
  };
  return { t, api: client.http, account };
}

export const teeVerify: Command = async (ctx) => {
  const action = ctx.args.positionals[0];
  if (action !== 'verify') throw new ClientError('USAGE', `tee: unknown action "${action}"; use verify`);
  const { t, api } = await target(ctx);
  const list = allowList(ctx);
  const a = anchors(ctx);
  const v = await verifyTeeInstance(t, api, {
    allowList: list,
    ...minTcb(ctx),
    ...(a ? { anchors: a } : {}),
  });
  const summary = {
    verdict: 'verified',
    sandbox_id: v.sandboxId,
    tee: v.live.facts?.tee,
    measurements: v.live.facts?.measurements,
    context: v.ctx,
    on_chain_tx: v.tx,
    key_id: Buffer.from(v.pubkey).toString('hex').slice(0, 16),
    /** The verified enclave key: the console takes it for evidence it cannot verify in a page (TDX, Nitro). */
    public_key: Buffer.from(v.pubkey).toString('hex'),
  };
  if (ctx.json) ctx.printJson(summary);
  else {
    ctx.out(
      `verified: ${summary.tee} enclave for sandbox ${v.sandboxId} (on chain in ${v.tx}, and live over a fresh nonce)`,
    );
    ctx.out(`measurements: ${JSON.stringify(summary.measurements)}`);
    ctx.out(`enclave key: ${summary.public_key} (the console's Attestation tab takes it for TDX/Nitro)`);
  }
  return 0;
};

/** `secrets set <id> K… --sealed`: verify, seal to the bound key, send. */
export async function sealedSecretsSet(
  ctx: CliContext,
  id: string,
  env: Record<string, string>,
): Promise<number> {
  const { t, api, account } = await target(ctx);
  const list = allowList(ctx);
  const a = anchors(ctx);
  const r = await sendSealedSecrets(t, api, env, {
    owner: account,
    allowList: list,
    ...minTcb(ctx),
    ...(a ? { anchors: a } : {}),
  });
  if (r.verified.sandboxId !== id) {
    ctx.note(`note: the attested instance sandbox is ${r.verified.sandboxId} (you named ${id})`);
  }
  if (ctx.json)
    ctx.printJson({ success: true, secrets_count: r.secrets_count, names: Object.keys(env), sealed: true });
  else
    ctx.out(
      `sealed secrets set on ${r.verified.sandboxId}: ${Object.keys(env).join(', ')} (opened only inside the enclave)`,
    );
  return 0;
}

/**
 * `--tee`: verify the enclave (exit 8 unless both attestations verify), then the sandbox's
 * operations over the owner channel, on both backends (phala: the CVM's sidecar ends it; direct:
 * the operator program the attestation measured). A relay that refuses the channel is an error,
 * never a reason to send the command in plaintext.
 */
export async function teeSandboxOps(ctx: CliContext, id: string): Promise<SandboxOps> {
  const { t, api, account } = await target(ctx);
  const a = anchors(ctx);
  const verified = await verifyTeeInstance(t, api, {
    allowList: allowList(ctx),
    ...minTcb(ctx),
    ...(a ? { anchors: a } : {}),
  });
  if (id !== verified.sandboxId && id !== 'instance') {
    ctx.note(`note: the attested instance sandbox is ${verified.sandboxId} (you named ${id})`);
  }
  const channel = ownerChannel(verified, api, account);
  // One round trip that also proves the enclave takes your signature.
  await channel.json('GET', '/health');
  return new TeeSandbox(channel);
}
