// What a bench reports for `npm run bench` (bench/run-all.ts): one `@@figure {json}` line per
// figure on stdout, next to the bench's own human-readable lines. A figure has its median and p99
// (or one value), the floor measured in the same run and their ratio, and, for a target of the
// speed issue, the target id, its text and whether it was met (with the reason when not).
import { loadavg } from 'node:os';

export interface Figure {
  /** Stable id; the targets table of RESULTS.md looks targets up by it (TARGETS in run-all.ts). */
  id: string;
  name: string;
  unit: 'ms' | 'MiB' | 'MiB/h' | 'count' | 'req/s' | 'x';
  n?: number;
  median: number;
  p99?: number;
  floor?: { name: string; median: number; p99?: number };
  /** median / floor median, when there is a floor. */
  ratio?: number;
  target?: { text: string; met: boolean; why?: string };
  note?: string;
}

export function figure(f: Figure): void {
  const ratio = f.ratio ?? (f.floor && f.floor.median > 0 ? f.median / f.floor.median : undefined);
  console.log(
    `@@figure ${JSON.stringify({ ...f, ...(ratio !== undefined ? { ratio } : {}), load: loadavg()[0] })}`,
  );
}

/** The q-quantile (nearest rank) of xs. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? Number.NaN;
}

export const median = (xs: readonly number[]) => quantile(xs, 0.5);
export const p99 = (xs: readonly number[]) => quantile(xs, 0.99);
