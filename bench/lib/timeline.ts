// Where an on-chain create's time goes, from the operator programs' own logs (pino JSON, epoch ms):
// the job mined (seen by the bench) -> the handler starts provisioning ("provisioning sandbox":
// job pickup plus the handler's chain reads) -> each provisioning phase -> "sandbox running" ->
// "job results submitted" (its estimate/persist/send/receipt split) -> the bench sees the result.
import { readFileSync } from 'node:fs';
import { median, p99 } from './figures.ts';

export interface CallSeen {
  callId: bigint;
  /** Wall clock (epoch ms) when the bench saw the submitJob receipt and the result event. */
  minedWall: number;
  seenWall: number;
}

interface Line {
  time: number;
  msg?: string;
  callId?: string;
  callIds?: string[];
  phase?: string;
  ms?: Record<string, number>;
}

function lines(files: string[]): Line[] {
  const out: Line[] = [];
  for (const f of files) {
    for (const l of readFileSync(f, 'utf8').split('\n')) {
      if (!l.startsWith('{')) continue;
      try {
        out.push(JSON.parse(l) as Line);
      } catch {}
    }
  }
  return out;
}

/** Human-readable medians (and p99) of each segment over the given calls; empty when not found. */
export function createTimeline(logFiles: string[], calls: CallSeen[]): string[] {
  const all = lines(logFiles);
  const seg = new Map<string, number[]>();
  const add = (k: string, v: number | undefined) => {
    if (v === undefined || Number.isNaN(v)) return;
    seg.set(k, [...(seg.get(k) ?? []), v]);
  };
  for (const c of calls) {
    const id = `${c.callId}`;
    const mine = all.filter((l) => l.callId === id);
    const start = mine.find((l) => l.msg === 'provisioning sandbox')?.time;
    const running = mine.find((l) => l.msg === 'sandbox running')?.time;
    const result = all.find((l) => l.msg === 'job results submitted' && l.callIds?.includes(id));
    if (start === undefined || running === undefined || !result) continue;
    add('mined -> provisioning starts (pickup + chain reads)', start - c.minedWall);
    let prev = start;
    for (const p of mine.filter((l) => l.msg === 'provisioning progress' && l.time >= start)) {
      add(`  phase ${p.phase} (since previous)`, p.time - prev);
      prev = p.time;
    }
    // The launch's own steps (runtime/src/sandbox/launch.ts): docker start (with its inspect),
    // start -> first /health answer (and how many polls), the env delivery.
    const steps = mine.find((l) => l.msg === 'sandbox launch steps');
    for (const [k, v] of Object.entries(steps?.ms ?? {}))
      add(k === 'polls' ? '    launch: /health polls (count)' : `    launch: ${k}`, v);
    add('provisioning starts -> sandbox running', running - start);
    add('sandbox running -> result mined (operator log)', result.time - running);
    for (const [k, v] of Object.entries(result.ms ?? {})) add(`  result tx: ${k}`, v);
    add('result mined -> seen by the bench (20 ms polling)', c.seenWall - result.time);
  }
  if (seg.size === 0) return [];
  return [
    `where a cold on-chain create's time goes (operator logs, n=${calls.length}; clocks: epoch ms):`,
    ...[...seg.entries()].map(([k, xs]) => {
      const u = k.endsWith('(count)') ? '' : ' ms';
      return `  ${k.padEnd(52)} median ${median(xs).toFixed(1)}${u}, p99 ${p99(xs).toFixed(1)}${u}`;
    }),
  ];
}
