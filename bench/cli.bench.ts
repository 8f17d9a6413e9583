// Benchmark: how fast the published `agent-sandbox` CLI starts. Runs the bundle the bin points at
// (client/dist/cli.mjs, built first) with `--help` against the floor `node -e 0`, paired
// (A B A B …) so both see the same machine load; wall time and peak RSS of each child, from
// GNU time. With --tsx, also the TypeScript launcher (bin/agent-sandbox.mjs, tsx at run time).
// Run: npx tsx bench/cli.bench.ts [--n 20] [--tsx]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';

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
const LAUNCHER = join(ROOT, 'client', 'bin', 'agent-sandbox.mjs');
execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-bins.mjs'), 'client'], { stdio: 'inherit' });

interface Sample {
  ms: number;
  rssMiB: number;
}

/** One run of `node ...args` under GNU time: wall (ms, from our clock) and peak RSS. */
function once(args: string[]): Sample {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TIME!, ['-f', '%M', process.execPath, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', AGENT_SANDBOX_OPERATOR: '' },
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

const subjects: Array<{ name: string; args: string[] }> = [
  { name: 'floor  node -e 0', args: ['-e', '0'] },
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

console.log(
  `cli.bench: load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, ${N} paired runs`,
);
const floor = samples[0]!;
const wallOf = (xs: Sample[]) => xs.map((x) => x.ms);
const rssOf = (xs: Sample[]) => xs.map((x) => x.rssMiB);
const median = (xs: number[]) => quantile(xs, 0.5);
for (const [k, s] of subjects.entries()) {
  const xs = samples[k]!;
  console.log(line(`${s.name} wall`, wallOf(xs), 'ms'));
  console.log(line(`${s.name} peak RSS`, rssOf(xs), 'MiB'));
  if (k === 0) continue;
  const wall = median(wallOf(xs)) / median(wallOf(floor));
  const rss = median(rssOf(xs)) / median(rssOf(floor));
  console.log(`ratio  ${s.name}/floor: wall ${wall.toFixed(2)} (target ≤ 3), RSS ${rss.toFixed(2)}`);
}
