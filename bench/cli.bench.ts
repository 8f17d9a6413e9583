// Benchmark: how fast the published `agent-sandbox` CLI starts. Runs the bundle the bin points at
// (client/dist/cli.mjs, built first) with `--help` against the floor `node -e 0`, paired
// (A B A B …) so both see the same machine load; wall time and peak RSS of each child, from
// GNU time. With --tsx, also the TypeScript launcher (bin/agent-sandbox.mjs, tsx at run time).
// Then (unless --no-exec) `agent-sandbox exec <id> -- true` against a local operator: a private
// devnet, the bundled operator programs (both of the cloud service's), one sandbox created on
// chain, `agent-sandbox login` once (the session cached in a config dir of this run), then exec
// round trips paired with `node -e 0` (figure `cli-exec`). With --before DIR (a copy of an older
// client/dist), each exec pair also runs that bundle, so a change is measured before/after in one
// interleaved run (fewer pairs: the write limit). --node PATH runs both bundles (not the floor's
// `node -e 0`, nor this process) with another Node, e.g. one with module.enableCompileCache (>= 22.1).
// --prof DIR: one more exec run under `node --cpu-prof` (the profile kept in DIR) and its top
// self time by module, to say where the CLI's own time goes.
// Run: npx tsx bench/cli.bench.ts [--n 20] [--tsx] [--no-exec] [--before DIR] [--node PATH] [--prof DIR]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { operatorUrlFromResult } from '../client/src/job-io.ts';
import { OperatorClient } from '../client/src/operator-client.ts';
import { SessionCache } from '../client/src/session-cache.ts';
import { Chain } from './lib/chain.ts';
import { figure } from './lib/figures.ts';
import { BenchRun, buildBins } from './lib/operators.ts';

const ROOT = resolve(import.meta.dirname, '..');
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = Math.max(10, arg('n', 20));
const TIME = ['/usr/bin/time', '/bin/time'].find((p) => existsSync(p));
if (!TIME) {
  console.error('cli.bench: GNU time is needed for peak RSS (apt-get install time)');
  process.exit(2);
}

const BUNDLE = join(ROOT, 'client', 'dist', 'cli.mjs');
const opt = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const BEFORE = opt('before') ? join(resolve(opt('before')!), 'cli.mjs') : undefined;
const NODE = opt('node') ? resolve(opt('node')!) : process.execPath;
const PROF = opt('prof') ? resolve(opt('prof')!) : undefined;
const LAUNCHER = join(ROOT, 'client', 'bin', 'agent-sandbox.mjs');
const EXEC = !process.argv.includes('--no-exec');
/** Exec pairs: at most 13 (the operator's write limit, 30 a minute per address); 8 with --before. */
const N_EXEC = BEFORE ? 8 : 13;
buildBins('client', ...(EXEC ? (['operator'] as const) : []));

interface Sample {
  ms: number;
  rssMiB: number;
}

/** One run of `node ...args` under GNU time: wall (ms, from our clock) and peak RSS. */
function once(args: string[], env: Record<string, string> = {}, node = process.execPath): Sample {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TIME!, ['-f', '%M', node, ...args], {
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/tmp',
      AGENT_SANDBOX_OPERATOR: '',
      ...env,
    },
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const kib = Number(r.stderr.trim().split('\n').at(-1));
  return { ms, rssMiB: kib / 1024 };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const line = (label: string, xs: number[], unit: string, digits = 1) =>
  `${label.padEnd(34)} median ${quantile(xs, 0.5).toFixed(digits)} ${unit}, p99 ${quantile(xs, 0.99).toFixed(digits)} ${unit} (n=${xs.length})`;
const median = (xs: number[]) => quantile(xs, 0.5);
const wallOf = (xs: Sample[]) => xs.map((x) => x.ms);
const rssOf = (xs: Sample[]) => xs.map((x) => x.rssMiB);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const FLOOR = { name: 'floor  node -e 0', args: ['-e', '0'] };

/** `--help` of the bundle (and of the tsx launcher with --tsx), paired with the floor. */
function helpBench(): void {
  const subjects: Array<{ name: string; args: string[] }> = [
    FLOOR,
    { name: 'bundle agent-sandbox --help', args: [BUNDLE, '--help'] },
    ...(process.argv.includes('--tsx')
      ? [{ name: 'tsx    bin/agent-sandbox.mjs --help', args: [LAUNCHER, '--help'] }]
      : []),
  ];
  for (const s of subjects) once(s.args); // warm the page cache
  const samples = subjects.map(() => [] as Sample[]);
  for (let i = 0; i < N; i++) {
    for (const [k, s] of subjects.entries()) samples[k]!.push(once(s.args));
  }
  console.log(`cli.bench: load ${load()}, ${N} paired runs`);
  const floor = samples[0]!;
  for (const [k, s] of subjects.entries()) {
    const xs = samples[k]!;
    console.log(line(`${s.name} wall`, wallOf(xs), 'ms'));
    console.log(line(`${s.name} peak RSS`, rssOf(xs), 'MiB'));
    if (k === 0) continue;
    const wall = median(wallOf(xs)) / median(wallOf(floor));
    const rss = median(rssOf(xs)) / median(rssOf(floor));
    console.log(`ratio  ${s.name}/floor: wall ${wall.toFixed(2)} (target ≤ 3), RSS ${rss.toFixed(2)}`);
    if (k !== 1) continue;
    figure({
      id: 'cli-help',
      name: 'agent-sandbox --help wall (bundle)',
      unit: 'ms',
      n: N,
      median: median(wallOf(xs)),
      p99: quantile(wallOf(xs), 0.99),
      floor: {
        name: 'node -e 0 (paired)',
        median: median(wallOf(floor)),
        p99: quantile(wallOf(floor), 0.99),
      },
      target: {
        text: '--help <= 3x node -e 0 wall',
        met: wall <= 3,
        ...(wall <= 3 ? {} : { why: `${wall.toFixed(2)}x` }),
      },
      note: `peak RSS median ${median(rssOf(xs)).toFixed(0)} MiB vs ${median(rssOf(floor)).toFixed(0)} MiB`,
    });
  }
}

/** `agent-sandbox exec <id> -- true` against a local operator (bundled), paired with the floor. */
async function execBench(run: BenchRun): Promise<void> {
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const info = await run.startDevnet();
  const chain = new Chain(info, privateKeyToAccount(info.accounts.user.privateKey));
  // Both operators of the devnet's cloud service run (the chain assigns a create to either); the
  // result names the one that holds the sandbox.
  await Promise.all([run.startOperator('operator1', image, {}), run.startOperator('operator2', image, {})]);
  const s = await chain.submit(
    JOB_SANDBOX_CREATE,
    encodeCreateInput(buildCreateRequest({ name: 'cli-bench', cpu_cores: 1, memory_mb: 256, disk_gb: 1 })),
  );
  const out = decodeCreateOutput((await chain.results([s.callId], s.block)).get(s.callId)!.output);
  const url = operatorUrlFromResult(out.json);
  if (!out.sandboxId || !url) throw new Error(`create failed: ${JSON.stringify(out.json)}`);
  const env = { AGENT_SANDBOX_OPERATOR: url, AGENT_SANDBOX_CONFIG_DIR: join(run.work, 'cli') };
  // Sign in once; the exec runs use the cached session only (no key in their environment).
  once([BUNDLE, 'login'], { ...env, AGENT_SANDBOX_PRIVATE_KEY: info.accounts.user.privateKey });
  const execArgs = [BUNDLE, 'exec', out.sandboxId, '--', 'true'];
  const beforeArgs = BEFORE ? [BEFORE, ...execArgs.slice(1)] : undefined;
  // warm: the chunks in the page cache (and the compile cache), the sidecar's first exec
  once(execArgs, env, NODE);
  if (beforeArgs) once(beforeArgs, env, NODE);
  // Where the time goes: the same client code in this (warm) process with the cached session, so
  // what the CLI adds on top is its process start and module loading.
  const cached = await new SessionCache(env.AGENT_SANDBOX_CONFIG_DIR).get(url, chain.user.address);
  if (!cached) throw new Error('agent-sandbox login cached no session');
  const api = new OperatorClient({ baseUrl: url, token: cached.token });
  await api.exec(out.sandboxId, 'true');
  const floor: Sample[] = [];
  const ours: Sample[] = [];
  const before: Sample[] = [];
  const inProc: number[] = [];
  // The operator allows 30 writes a minute per client address (an exec is a write): the two warm-up
  // execs and two per pair stay under it.
  for (let i = 0; i < Math.min(N, N_EXEC); i++) {
    floor.push(once(FLOOR.args));
    if (beforeArgs) before.push(once(beforeArgs, env, NODE));
    ours.push(once(execArgs, env, NODE));
    const t0 = performance.now();
    await api.exec(out.sandboxId, 'true');
    inProc.push(performance.now() - t0);
  }
  console.log(
    `cli exec: load ${load()}, ${ours.length} paired runs, operator ${url} (bundle), sandbox ${out.sandboxId}` +
      (NODE === process.execPath ? '' : `, bundles run by ${NODE}`),
  );
  console.log(line('floor  node -e 0 wall', wallOf(floor), 'ms'));
  if (BEFORE) {
    console.log(line(`before ${BEFORE} exec`, wallOf(before), 'ms'));
    console.log(line('before exec peak RSS', rssOf(before), 'MiB'));
  }
  console.log(line('bundle agent-sandbox exec -- true', wallOf(ours), 'ms'));
  console.log(line('bundle agent-sandbox exec peak RSS', rssOf(ours), 'MiB'));
  console.log(line('in-process OperatorClient.exec', inProc, 'ms'));
  if (PROF) profileOnce(execArgs, env);
  const m = median(wallOf(ours));
  figure({
    id: 'cli-exec',
    name: 'agent-sandbox exec <id> -- true round trip (bundle, local operator, cached session)',
    unit: 'ms',
    n: ours.length,
    median: m,
    p99: quantile(wallOf(ours), 0.99),
    floor: { name: 'node -e 0 (paired)', median: median(wallOf(floor)), p99: quantile(wallOf(floor), 0.99) },
    target: {
      text: 'exec round trip <= 150 ms median',
      met: m <= 150,
      ...(m <= 150 ? {} : { why: `${m.toFixed(0)} ms` }),
    },
  });
}

/** One exec under --cpu-prof: the profile's self time summed by script (module), top 12. */
function profileOnce(execArgs: string[], env: Record<string, string>): void {
  mkdirSync(PROF!, { recursive: true });
  const had = new Set(readdirSync(PROF!));
  once(['--cpu-prof', '--cpu-prof-dir', PROF!, ...execArgs], env, NODE);
  const file = readdirSync(PROF!).find((f) => f.endsWith('.cpuprofile') && !had.has(f));
  if (!file) throw new Error(`no .cpuprofile was written in ${PROF}`);
  const p = JSON.parse(readFileSync(join(PROF!, file), 'utf8')) as {
    nodes: Array<{ id: number; callFrame: { url: string; functionName: string } }>;
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  for (const [k, id] of p.samples.entries()) {
    const n = byId.get(id)!;
    const d = (p.timeDeltas[k] ?? 0) / 1000;
    total += d;
    const where = n.callFrame.url
      ? n.callFrame.url.replace(/^file:\/\/.*\/(client\/dist\/)/, '$1')
      : `(${n.callFrame.functionName || 'native'})`;
    self.set(where, (self.get(where) ?? 0) + d);
  }
  console.log(
    `profile of one exec run: ${join(PROF!, file)} (${total.toFixed(0)} ms sampled), self time by script:`,
  );
  for (const [where, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 12))
    console.log(`  ${ms.toFixed(1).padStart(7)} ms  ${where}`);
}

helpBench();
if (EXEC) {
  const run = new BenchRun('cli-bench');
  try {
    await execBench(run);
  } catch (e) {
    console.error(`cli exec bench failed: ${(e as Error).stack ?? e}`);
    if (run.ops.length) console.error(`operator logs kept in ${run.keptLogs()}`);
    process.exitCode = 1;
  } finally {
    await run.cleanup();
  }
}
