// The CLI's operator-API commands: login/logout, list/get, exec, secrets, stop/resume/snapshot.
import { SANDBOX_SCOPES, type Sandbox, type SandboxScope } from '../api-types.ts';
import { ClientError, ExitCode } from '../errors.ts';
import type { SandboxOps } from '../tee-sandbox.ts';
import type { CliContext } from './context.ts';

export type Command = (ctx: CliContext) => Promise<number>;

/** exec/files/prompt/terminal: with --tee the verified enclave over the owner channel, else the operator's routes. */
export async function sandboxOps(ctx: CliContext, id: string): Promise<SandboxOps> {
  if (ctx.args.options.tee === true) return (await import('./tee.ts')).teeSandboxOps(ctx, id);
  return ctx.operator(id);
}

/** `K=V` pairs (and, with `fromEnv`, bare `K` read from the environment). */
export function parsePairs(
  pairs: string[],
  what: string,
  fromEnv?: NodeJS.ProcessEnv,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq === -1 && fromEnv) {
      const v = fromEnv[p];
      if (v === undefined)
        throw new ClientError('USAGE', `${what}: ${p} has no value and is not set in your environment`);
      out[p] = v;
      continue;
    }
    if (eq <= 0) throw new ClientError('USAGE', `${what}: expected K=V, got "${p.slice(0, 40)}"`);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}

/** Epoch milliseconds or seconds (or an ISO string) as ISO 8601; anything else unchanged. */
function readableTime(v: unknown): string {
  if (typeof v === 'number' && Number.isFinite(v) && v > 0) {
    return new Date(v < 1e12 ? v * 1000 : v).toISOString();
  }
  return String(v);
}

function sandboxLine(s: Sandbox): string {
  const extra = ['name', 'role', 'cpu_cores', 'memory_mb', 'created_at']
    .filter((k) => s[k] !== undefined && s[k] !== null)
    .map((k) => `${k}=${k === 'created_at' ? readableTime(s[k]) : String(s[k])}`)
    .join(' ');
  return `${s.id}\t${s.state}${extra ? `\t${extra}` : ''}`;
}

export const login: Command = async (ctx) => {
  const account = await ctx.requireAccount('login');
  const client = await ctx.operator();
  const session = await client.login();
  const expiresAt = session.expires_at;
  if (ctx.json) {
    ctx.printJson({
      operator: client.baseUrl,
      address: account.address,
      expires_at: expiresAt,
      ...(ctx.args.options['show-token'] ? { token: session.token } : {}),
    });
  } else {
    ctx.out(`signed in to ${client.baseUrl} as ${account.address}`);
    ctx.note(`session cached in ${ctx.cache.sessionsFile} (mode 0600)`);
    if (ctx.args.options['show-token']) ctx.out(session.token);
  }
  return 0;
};

export const logout: Command = async (ctx) => {
  const client = await ctx.operator();
  const account = await ctx.account();
  const cached = await ctx.cache.get(client.baseUrl, account?.address);
  await client.logout().catch((e) => {
    // A session the operator already refuses is as good as revoked.
    if (!(e instanceof ClientError && e.exitCode === 2)) throw e;
  });
  if (cached) await ctx.cache.remove(client.baseUrl, cached.address);
  if (ctx.json) ctx.printJson({ revoked: true, operator: client.baseUrl });
  else ctx.out(`signed out of ${client.baseUrl}`);
  return 0;
};

export const list: Command = async (ctx) => {
  const scope = (ctx.args.options.scope as string | undefined) ?? 'all';
  if (!(SANDBOX_SCOPES as readonly string[]).includes(scope))
    throw new ClientError('USAGE', `--scope must be personal, team or all, got "${scope}"`);
  const urls = await ctx.operatorUrls();
  const all: Array<Sandbox & { operator_url: string }> = [];
  let failures = 0;
  let lastError: unknown;
  for (const url of urls) {
    try {
      const client = await ctx.operatorAt(url);
      for (const s of await client.list(scope as SandboxScope))
        all.push({ ...s, operator_url: client.baseUrl });
    } catch (e) {
      // With several operators, one being down must not hide the others' sandboxes.
      if (urls.length === 1) throw e;
      failures++;
      lastError = e;
      ctx.note(`${url}: ${(e as Error).message}`);
    }
  }
  if (failures === urls.length && lastError) throw lastError;
  if (ctx.json) ctx.printJson(all);
  else if (all.length === 0) ctx.note('no sandboxes');
  else for (const s of all) ctx.out(`${sandboxLine(s)}${urls.length > 1 ? `\t${s.operator_url}` : ''}`);
  return failures ? ExitCode.REMOTE : ExitCode.OK;
};

export const get: Command = async (ctx) => {
  const id = ctx.args.positionals[0]!;
  const client = await ctx.operator(id);
  const sandbox = await client.get(id);
  if (!sandbox) throw new ClientError('NOT_FOUND', `sandbox ${id} does not exist on ${client.baseUrl}`);
  if (ctx.json) ctx.printJson(sandbox);
  else {
    for (const [k, v] of Object.entries(sandbox)) {
      if (k === 'timer_deadlines') continue;
      ctx.out(`${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
    }
    for (const line of deadlineLines(sandbox.timer_deadlines, Date.now())) ctx.out(line);
  }
  return 0;
};

/** "in 14 min", "in 2 h 59 min", "in 29 d 23 h"; "due now" once passed. */
function until(at: number, now: number): string {
  const min = Math.floor((at - now) / 60_000);
  if (min <= 0) return 'due now';
  if (min < 60) return `in ${min} min`;
  if (min < 48 * 60) return `in ${Math.floor(min / 60)} h ${min % 60} min`;
  return `in ${Math.floor(min / 1440)} d ${Math.floor((min % 1440) / 60)} h`;
}

/** When each timer of the view fires (only those that run in its state), readable. */
function deadlineLines(d: unknown, now: number): string[] {
  if (!d || typeof d !== 'object') return [];
  const t = d as Record<string, unknown>;
  const lines: Array<[string, unknown, string]> = [
    ['stops if idle at', t['idle_stop_at'], ''],
    ['stops at (lifetime)', t['max_lifetime_stop_at'], ''],
    ['deleted at', t['delete_at'], ', unless resumed'],
  ];
  return lines
    .filter(([, at]) => typeof at === 'number')
    .map(
      ([what, at, tail]) =>
        `${what}: ${new Date(at as number).toISOString()} (${until(at as number, now)}${tail})`,
    );
}

export const exec: Command = async (ctx) => {
  const [id, ...words] = ctx.args.positionals as [string, ...string[]];
  const command = words.join(' ');
  const o = ctx.args.options;
  const timeout = o.timeout as string | undefined;
  if (timeout !== undefined && !/^\d+$/.test(timeout))
    throw new ClientError('USAGE', '--timeout must be milliseconds');
  const client = await sandboxOps(ctx, id);
  const r = await client.exec(id, command, {
    ...(o.cwd ? { cwd: o.cwd as string } : {}),
    ...(o.env ? { env: parsePairs(o.env as string[], '--env') } : {}),
    ...(timeout ? { timeoutMs: Number(timeout) } : {}),
  });
  if (ctx.json) ctx.printJson(r);
  else {
    ctx.io.stdout.write(r.stdout);
    ctx.io.stderr.write(r.stderr);
    if (r.exit_code !== 0) ctx.note(`[exit ${r.exit_code}]`);
  }
  return r.exit_code === 0 ? ExitCode.OK : ExitCode.COMMAND_FAILED;
};

export const secrets: Command = async (ctx) => {
  const [action, id, ...pairs] = ctx.args.positionals as [string, string, ...string[]];
  const client = await ctx.operator(id);
  switch (action) {
    case 'set': {
      if (pairs.length === 0)
        throw new ClientError('USAGE', 'secrets set: give at least one K=V (or K from your env)');
      const env = parsePairs(pairs, 'secrets set', ctx.io.env);
      if (ctx.args.options.sealed === true) return (await import('./tee.ts')).sealedSecretsSet(ctx, id, env);
      const r = await client.setSecrets(id, env);
      // Echo names only: values never reach the terminal or a log.
      if (ctx.json) ctx.printJson({ ...r, names: Object.keys(env) });
      else ctx.out(`secrets set on ${id}: ${Object.keys(env).join(', ')}`);
      return 0;
    }
    case 'wipe': {
      if (pairs.length) throw new ClientError('USAGE', 'secrets wipe takes only the sandbox id');
      const r = await client.wipeSecrets(id);
      if (ctx.json) ctx.printJson(r);
      else ctx.out(`secrets wiped on ${id}`);
      return 0;
    }
    case 'list': {
      if (pairs.length) throw new ClientError('USAGE', 'secrets list takes only the sandbox id');
      const names = await client.listSecrets(id);
      if (ctx.json) ctx.printJson(names);
      else for (const n of names) ctx.out(n);
      return 0;
    }
    default:
      throw new ClientError('USAGE', `secrets: unknown action "${action}"; use set, wipe or list`);
  }
};

function lifecycle(kind: 'stop' | 'resume' | 'snapshot'): Command {
  return async (ctx) => {
    const id = ctx.args.positionals[0]!;
    const client = await ctx.operator(id);
    const r = await client[kind](id);
    if (ctx.json) ctx.printJson(r);
    else if (kind === 'snapshot') {
      const snap = (r.snapshot ?? {}) as Record<string, unknown>;
      const snapId = typeof snap.snapshotImageId === 'string' ? snap.snapshotImageId : undefined;
      ctx.out(snapId ? `${id}: snapshot ${snapId}` : `${id}: snapshot taken`);
      if (snapId) ctx.note(`create a sandbox from it: agent-sandbox create --from-snapshot ${snapId}`);
    } else ctx.out(`${id}: ${typeof r.state === 'string' ? r.state : 'ok'}`);
    return 0;
  };
}

export const stop = lifecycle('stop');
export const resume = lifecycle('resume');
export const snapshot = lifecycle('snapshot');

export const shapes: Command = async (ctx) => {
  const client = await ctx.publicOperator();
  const s = await client.shapes();
  if (ctx.json) {
    ctx.printJson(s);
    return 0;
  }
  const size = (x: { cpuCores: number; memoryMb: number; diskGb: number }) =>
    `${x.cpuCores} cores\t${x.memoryMb} MB\t${x.diskGb} GB`;
  for (const p of s.presets) {
    const tags = [p.name === s.default ? 'default' : '', p.fits ? '' : 'above the ceiling'].filter(Boolean);
    ctx.out(`${p.name}\t${size(p)}${tags.length ? `\t(${tags.join(', ')})` : ''}`);
  }
  ctx.out(`ceiling\t${size(s.ceiling)}`);
  return 0;
};
