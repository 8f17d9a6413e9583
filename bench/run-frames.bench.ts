// Benchmark: the cost of bounding run frames to 1 MiB (runtime/src/api/runs/frames.ts) per stored
// event, against a floor measured in the same run: the JSON.stringify + byte count the run log
// already does for every event. Typical deltas (100 B, 4 KiB, 64 KiB of text) and an oversize one
// (1.5 MB, split). Prints median/p99 per call and the ratio to the floor.
// Run: npx tsx bench/run-frames.bench.ts [--iterations 2000]
import { cpus, loadavg } from 'node:os';
import { boundFrames } from '../runtime/src/api/runs/frames.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const ITERATIONS = arg('iterations', 2000);

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

function time(n: number, fn: () => void): number[] {
  for (let i = 0; i < Math.min(50, n); i++) fn(); // warm-up
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

const delta = (text: string) => ({
  part: { id: 'part_0123', type: 'text', text, content: text, state: 'running' },
  delta: true,
});

console.log(
  `cpus ${cpus().length}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (const [label, bytes, n] of [
  ['100 B delta', 100, ITERATIONS],
  ['4 KiB delta', 4096, ITERATIONS],
  ['64 KiB delta', 65_536, ITERATIONS],
  ['1.5 MB delta (split)', 1_500_000, Math.max(20, Math.floor(ITERATIONS / 50))],
] as const) {
  const data = delta('line of agent output "quoted"\n'.repeat(Math.ceil(bytes / 30)).slice(0, bytes));
  const floor = time(n, () => void Buffer.byteLength(JSON.stringify(data)));
  const bounded = time(n, () => void boundFrames('message.part.updated', data));
  const f = quantile(floor, 0.5);
  const b = quantile(bounded, 0.5);
  console.log(
    `${label.padEnd(22)} floor median ${f.toFixed(4)} ms p99 ${quantile(floor, 0.99).toFixed(4)} ms | ` +
      `boundFrames median ${b.toFixed(4)} ms p99 ${quantile(bounded, 0.99).toFixed(4)} ms | ratio ${(b / f).toFixed(2)} (n=${n})`,
  );
}
