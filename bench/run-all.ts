// `npm run bench`: installs what the benches need (wrk, via apt, when missing), runs every
// bench/*.bench.ts one after the other with defaults sized for 2 cores (the whole run well under
// 15 minutes), and writes bench/RESULTS.md: commit, date, load average, every figure (median, p99,
// floor measured in the same run, ratio) and every target of the speed issue, met or not and why.
// Each bench stays runnable alone (npx tsx bench/<name>.bench.ts); a bench this list has no
// defaults for runs with its own. Options: --only <name,...> (a partial run; RESULTS.md says so),
// --out <file> (default bench/RESULTS.md).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { Figure } from './lib/figures.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BENCH = join(ROOT, 'bench');
const opt = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const OUT = resolve(opt('out') ?? join(BENCH, 'RESULTS.md'));
const ONLY = opt('only')?.split(',');

/** Defaults for 2 cores: each bench's arguments and the most it may take. */
const DEFAULTS: Record<string, { args: string[]; timeoutS: number }> = {
  runtime: { args: ['--n', '12', '--concurrent', '100', '--records', '1000'], timeoutS: 480 },
  e2e: { args: ['--n', '8', '--burst', '20', '--pool-n', '8'], timeoutS: 360 },
  api: { args: ['--seconds', '5', '--execs', '100'], timeoutS: 150 },
  sidecar: { args: ['--starts', '5', '--execs', '100'], timeoutS: 180 },
  network: { args: ['--n', '4'], timeoutS: 240 },
  'port-proxy': { args: ['--requests', '200'], timeoutS: 90 },
  'sdk-jobs': { args: ['--jobs', '100'], timeoutS: 120 },
  storage: { args: ['--n', '3'], timeoutS: 360 },
  tee: { args: ['--n', '100'], timeoutS: 60 },
  cli: { args: ['--n', '20'], timeoutS: 240 },
  gvisor: { args: ['--n', '4', '--r', '10', '--files', '2000'], timeoutS: 600 },
  // N container starts on 2 shared cores: a small N here; issue 24's figures used --n 30.
  density: { args: ['--n', '10', '--batch', '10'], timeoutS: 600 },
  // 100 at once, then churn: the issue asks an hour; `npx tsx bench/scale.bench.ts --churn-minutes 60`.
  scale: { args: ['--n', '100', '--churn-minutes', '15'], timeoutS: 1800 },
  // 4 operator programs on one engine: 20 creates filling the fleet, a kill run of 12, 20 solo;
  // issue 24's figure used --creates 100 --capacities 10,20,30,40 --kill-creates 40.
  fleet: { args: ['--creates', '20', '--capacities', '2,4,6,8', '--kill-creates', '12'], timeoutS: 900 },
};

/** The speed issue's targets, by the figure id that reports each, and who measures it. */
const TARGETS: Array<{ id: string; text: string; bench: string }> = [
  {
    id: 'cold-onchain',
    text: 'cold create-to-ready on chain: <= 1.10x the docker run -> /health floor median, <= 1.20x p99',
    bench: 'e2e',
  },
  {
    id: 'cold-create',
    text: 'cold create-to-ready, runtime level: <= 1.0x the docker run -> /health floor, median',
    bench: 'runtime',
  },
  {
    id: 'pool-onchain',
    text: 'on-chain create with a warm pool: <= chain floor (submitJob mined -> empty submitResult mined) + 30 ms, median',
    bench: 'e2e',
  },
  {
    id: 'cli-exec',
    text: 'agent-sandbox exec <id> -- true round trip (bundled CLI, cached session): <= 150 ms median',
    bench: 'cli',
  },
  {
    id: 'rss-100',
    text: 'operator program RSS (the bundle) with 100 running sandboxes: <= 150 MiB',
    bench: 'scale',
  },
  {
    id: 'rss-churn',
    text: 'operator program RSS flat over create/delete churn (slope reported)',
    bench: 'scale',
  },
  {
    id: 'concurrent-creates',
    text: '100 creates at once (on chain, one operator) all ready: <= 1.2x 100 concurrent docker run -> /health',
    bench: 'scale',
  },
  {
    id: 'burst-20',
    text: '20 creates mined in one block -> all ready: <= 1.2x 20 concurrent docker run -> /health (same run)',
    bench: 'e2e',
  },
  {
    id: 'pool-claim',
    text: 'warm-pool create (runtime level, claim -> ready to exec): median <= 100 ms',
    bench: 'runtime',
  },
  {
    id: 'cli-help',
    text: 'CLI: agent-sandbox --help <= 3x node -e 0 wall (median of paired runs)',
    bench: 'cli',
  },
  { id: 'reconcile-1000', text: 'reconcile of 1,000 records <= 1 s', bench: 'runtime' },
];

interface Ran {
  name: string;
  command: string;
  code: number | null;
  seconds: number;
  figures: Array<Figure & { ratio?: number; load?: number }>;
  output: string;
}

function ensureWrk(): void {
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return;
  } catch {}
  if (process.getuid?.() !== 0) {
    throw new Error('wrk is missing and this is not root; install it: sudo apt-get install -y wrk');
  }
  console.error('[bench] installing wrk (apt-get install -y wrk)');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

function runBench(name: string): Promise<Ran> {
  const d = DEFAULTS[name] ?? { args: [], timeoutS: 300 };
  const file = join('bench', `${name}.bench.ts`);
  const command = `npx tsx ${file} ${d.args.join(' ')}`.trim();
  console.error(`\n[bench] ${command}`);
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...d.args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a bench over its time is stopped with everything it started.
    detached: true,
  });
  let output = '';
  const figures: Ran['figures'] = [];
  let partial = '';
  child.stdout.on('data', (b: Buffer) => {
    partial += b.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('@@figure ')) figures.push(JSON.parse(line.slice(9)));
      else {
        output += `${line}\n`;
        process.stdout.write(`${line}\n`);
      }
    }
  });
  child.stderr.on('data', (b: Buffer) => process.stderr.write(b));
  const timer = setTimeout(() => {
    console.error(`[bench] ${name} ran over ${d.timeoutS} s; stopping it (SIGINT, its clean-up runs)`);
    try {
      process.kill(-child.pid!, 'SIGINT');
    } catch {}
    // A clean-up that does not finish either: the group goes.
    setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, 180_000).unref();
  }, d.timeoutS * 1000);
  return new Promise((res) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      if (partial) output += partial;
      res({ name, command, code, seconds: (performance.now() - t0) / 1000, figures, output });
    }),
  );
}

const num = (x: number | undefined, unit = '') =>
  x === undefined || Number.isNaN(x)
    ? '–'
    : `${x >= 100 ? x.toFixed(0) : x.toFixed(1)}${unit ? ` ${unit}` : ''}`;

/** The commit the run starts from (and whether tracked files differ from it). */
function commitNow(): string {
  const sh = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  };
  const dirty = sh(['status', '--porcelain', '--untracked-files=no']) ? ' (with uncommitted changes)' : '';
  return `${sh(['rev-parse', '--short', 'HEAD'])}${dirty}`;
}

function report(
  ran: Ran[],
  commit: string,
  loadStart: number[],
  loadEnd: number[],
  started: Date,
  seconds: number,
): string {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const all = ran.flatMap((r) => r.figures.map((f) => ({ ...f, bench: r.name })));
  const lines: string[] = [
    '# Benchmark results',
    '',
    `Written by \`npm run bench\` (bench/run-all.ts)${ONLY ? `, partial run: --only ${ONLY.join(',')}` : ''}.`,
    '',
    `- commit: ${commit} (at the start of the run)`,
    `- date: ${started.toISOString()}; whole run ${num(seconds / 60)} min`,
    `- machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'})`,
    `- load average (1, 5, 15 min): start ${load(loadStart)}; end ${load(loadEnd)}`,
    '',
    'Benchmarks are noisy on a shared machine: read every figure with the load average it was',
    'measured under (the `load` column, 1-minute average when the figure was taken).',
    '',
    '## Targets',
    '',
    '| target | measured | floor (same run) | ratio | met | why / note |',
    '|---|---|---|---|---|---|',
  ];
  for (const t of TARGETS) {
    const f = all.find((x) => x.id === t.id);
    const r = ran.find((x) => x.name === t.bench);
    if (!f) {
      const why = !existsSync(join(BENCH, `${t.bench}.bench.ts`))
        ? `not measured: bench/${t.bench}.bench.ts is not in this tree`
        : !r
          ? `not measured: bench ${t.bench} was not run`
          : r.code !== 0
            ? `not measured: bench ${t.bench} exited with ${r.code} (output below)`
            : `not reported as a figure by bench ${t.bench}; see its output below`;
      lines.push(`| ${t.text} | – | – | – | no | ${why} |`);
      continue;
    }
    const m = `median ${num(f.median, f.unit)}${f.p99 !== undefined ? `, p99 ${num(f.p99, f.unit)}` : ''}`;
    const fl = f.floor
      ? `${f.floor.name}: median ${num(f.floor.median, f.unit)}${f.floor.p99 !== undefined ? `, p99 ${num(f.floor.p99, f.unit)}` : ''}`
      : '–';
    const met = f.target ? (f.target.met ? 'yes' : 'no') : '?';
    const why = [f.target?.why, f.note].filter(Boolean).join('; ');
    lines.push(
      `| ${t.text} | ${m} | ${fl} | ${f.ratio !== undefined ? `${f.ratio.toFixed(2)}x` : '–'} | ${met} | ${why.replaceAll('|', '\\|')} |`,
    );
  }
  lines.push(
    '',
    '## Every figure',
    '',
    '| bench | figure | n | median | p99 | floor median | floor p99 | ratio | load |',
    '|---|---|---|---|---|---|---|---|---|',
  );
  for (const f of all) {
    lines.push(
      `| ${f.bench} | ${f.name.replaceAll('|', '\\|')} | ${f.n ?? '–'} | ${num(f.median, f.unit)} | ${num(f.p99, f.unit)} | ${num(f.floor?.median, f.unit)} | ${num(f.floor?.p99, f.unit)} | ${f.ratio !== undefined ? `${f.ratio.toFixed(2)}x` : '–'} | ${f.load?.toFixed(2) ?? '–'} |`,
    );
  }
  lines.push('', '## Each bench', '');
  for (const r of ran) {
    lines.push(
      `### ${r.name}`,
      '',
      `\`${r.command}\` — exit ${r.code}, ${num(r.seconds)} s`,
      '',
      '```',
      r.output.trim(),
      '```',
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const started = new Date();
  const t0 = performance.now();
  const loadStart = loadavg();
  const commit = commitNow();
  const names = readdirSync(BENCH)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.slice(0, -'.bench.ts'.length))
    .filter((n) => !ONLY || ONLY.includes(n))
    .sort((a, b) => (a === 'e2e' ? -1 : b === 'e2e' ? 1 : a.localeCompare(b)));
  if (names.includes('api')) ensureWrk();
  const ran: Ran[] = [];
  for (const n of names) ran.push(await runBench(n));
  const text = report(ran, commit, loadStart, loadavg(), started, (performance.now() - t0) / 1000);
  writeFileSync(OUT, text);
  console.error(`\n[bench] wrote ${OUT}`);
  const failed = ran.filter((r) => r.code !== 0).map((r) => r.name);
  if (failed.length) {
    console.error(`[bench] benches that failed: ${failed.join(', ')} (see ${OUT})`);
    process.exitCode = 1;
  }
}

await main();
