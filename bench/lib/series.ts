// Small helpers for benches that follow a value over time: the load average as one string, and a
// least-squares line through (t, value) samples (the slope of an RSS over a churn).
import { loadavg } from 'node:os';

/** The 1, 5 and 15 minute load averages, as "a b c". */
export const loadNow = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** Least-squares slope and intercept of mib over t (NaN slope with fewer than 2 samples). */
export function fitSlope(xs: ReadonlyArray<{ t: number; mib: number }>): {
  slope: number;
  intercept: number;
} {
  const n = xs.length;
  if (n < 2) return { slope: Number.NaN, intercept: Number.NaN };
  const mt = xs.reduce((a, x) => a + x.t, 0) / n;
  const mv = xs.reduce((a, x) => a + x.mib, 0) / n;
  let num = 0;
  let den = 0;
  for (const x of xs) {
    num += (x.t - mt) * (x.mib - mv);
    den += (x.t - mt) ** 2;
  }
  const slope = den > 0 ? num / den : Number.NaN;
  return { slope, intercept: mv - slope * mt };
}
