// Benchmark: what idle sandboxes cost one host. On a private devnet with both bundled operator
// programs (blueprint-bin/dist/main.mjs, as users run them), N sandboxes of the default shape are
// created on chain in batches and left idle; then: each operator program's RSS (before any create,
// and with its share of the N running), the slope per sandbox, and each sandbox container's cgroup
// memory (what the host pays for an idle one: sidecar plus container overhead). From those, how
// many idle sandboxes one host's memory holds, extrapolated and said so, next to the admission
// budget (SANDBOX_MEMORY_BUDGET_MB: memory limits, not usage). Not part of `npm run bench`'s
// defaults on a shared machine: N creates cost N container starts.
// Run: npx tsx bench/density.bench.ts [--n 30] [--batch 10]
import { execFile } from 'node:child_process';
import { loadavg, totalmem } from 'node:os';
import { promisify } from 'node:util';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { operatorUrlFromResult } from '../client/src/job-io.ts';
import { defaultMemoryBudgetMb } from '../runtime/src/sandbox/memory-budget.ts';
import { Chain, operatorRssMiB } from './lib/chain.ts';
import { figure, median, p99 } from './lib/figures.ts';
import { BenchRun, buildBins } from './lib/operators.ts';

const exec = promisify(execFile);
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('n', 30);
const BATCH = arg('batch', 10);
const MEMORY_MB = 1024; // the default shape's memory limit
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** cgroup memory (MiB) of each of this run's sandbox containers, from the engine's stats. */
async function containerMemMiB(label: string): Promise<number[]> {
  const { stdout: ids } = await exec('docker', ['ps', '-q', '--filter', `label=${label}`]);
  const list = ids.split('\n').filter(Boolean);
  if (!list.length) return [];
  const { stdout } = await exec('docker', ['stats', '--no-stream', '--format', '{{.MemUsage}}', ...list]);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const m = /^([\d.]+)\s*([KMG]i?B)/.exec(l.trim());
      if (!m) return Number.NaN;
      const f = { KiB: 1 / 1024, KB: 1 / 1024, MiB: 1, MB: 1, GiB: 1024, GB: 1024 }[m[2]!] ?? 1;
      return Number(m[1]) * f;
    })
    .filter((x) => !Number.isNaN(x));
}

async function main(run: BenchRun): Promise<void> {
  buildBins('operator');
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  const info = await run.startDevnet();
  const chain = new Chain(info, privateKeyToAccount(info.accounts.user.privateKey));
  const extra = { SANDBOX_DEFAULT_MEMORY_MB: String(MEMORY_MB) };
  const ops = await Promise.all([
    run.startOperator('operator1', image, extra),
    run.startOperator('operator2', image, extra),
  ]);
  // Settled as long as the measurement at the end: right after its start an operator's RSS still
  // holds start-up garbage (158 MiB 5 s after ready, 134 MiB later in the first run).
  await sleep(15_000);
  const idle = ops.map((o) => operatorRssMiB(o.child.pid!));
  console.log(
    `density: n=${N} default-shape sandboxes (${MEMORY_MB} MB limit), batches of ${BATCH}; load ${load()}`,
  );
  console.log(
    `operator RSS before any create: ${ops.map((o, i) => `${o.role} ${idle[i]!.toFixed(0)} MiB`).join(', ')}`,
  );
  const held = new Map<string, number>(ops.map((o) => [o.url, 0]));
  let ready = 0;
  const failures: string[] = [];
  for (let done = 0; done < N; done += BATCH) {
    const subs = [];
    for (let i = done; i < Math.min(N, done + BATCH); i++) {
      subs.push(
        await chain.submit(
          JOB_SANDBOX_CREATE,
          encodeCreateInput(
            buildCreateRequest({ name: `density-${i}`, cpu_cores: 1, memory_mb: MEMORY_MB, disk_gb: 1 }),
          ),
        ),
      );
    }
    const results = await chain.results(
      subs.map((s) => s.callId),
      subs[0]!.block,
      600_000,
    );
    for (const r of results.values()) {
      const out = decodeCreateOutput(r.output);
      const url = operatorUrlFromResult(out.json);
      if (out.sandboxId && url) {
        ready++;
        const key = [...held.keys()].find((u) => url.startsWith(u) || u.startsWith(url)) ?? url;
        held.set(key, (held.get(key) ?? 0) + 1);
      } else failures.push(JSON.stringify(out.json).slice(0, 200));
    }
    console.log(`  ${ready} ready after batch ending ${Math.min(N, done + BATCH)}; load ${load()}`);
  }
  // Idle: let every sidecar's app load and settle before measuring.
  await sleep(15_000);
  const rss = ops.map((o) => operatorRssMiB(o.child.pid!));
  const mem = await containerMemMiB(run.label);
  const perOp = ops.map((o, i) => {
    const count = held.get(o.url) ?? 0;
    return { role: o.role, count, rss: rss[i]!, slope: count ? (rss[i]! - idle[i]!) / count : 0 };
  });
  for (const p of perOp) {
    console.log(
      `${p.role}: ${p.count} running, RSS ${p.rss.toFixed(0)} MiB (+${p.slope.toFixed(2)} MiB per sandbox over its idle RSS)`,
    );
  }
  if (failures.length) console.log(`${failures.length} creates failed; first: ${failures[0]}`);
  const m = median(mem);
  const hostMiB = totalmem() / 2 ** 20;
  // A negative slope is the start-up garbage collected meanwhile, not a saving: counted as 0.
  const slope = Math.max(0, median(perOp.filter((p) => p.count).map((p) => p.slope)));
  const perSandbox = m + slope;
  const fits = Math.floor((defaultMemoryBudgetMb() - median(idle)) / perSandbox);
  console.log(
    `sandbox container cgroup memory (idle): median ${m.toFixed(1)} MiB, p99 ${p99(mem).toFixed(1)} MiB (n=${mem.length})`,
  );
  console.log(
    `extrapolated, not measured: this ${(hostMiB / 1024).toFixed(1)} GiB host holds ~${fits} idle sandboxes by memory (${perSandbox.toFixed(1)} MiB each: container ${m.toFixed(1)} + operator ${slope.toFixed(2)}); its default admission budget (${defaultMemoryBudgetMb()} MB of limits) admits ${Math.floor(defaultMemoryBudgetMb() / MEMORY_MB)} of the default shape per operator; CPU (2 cores) bounds how many start at once, not how many idle`,
  );
  console.log(`load at end ${load()}`);
  for (const p of perOp) {
    figure({
      id: `density-rss-${p.role}`,
      name: `${p.role} program RSS with ${p.count} running idle sandboxes (bundle)`,
      unit: 'MiB',
      median: p.rss,
      note: `idle before creates ${idle[ops.findIndex((o) => o.role === p.role)]!.toFixed(0)} MiB; +${p.slope.toFixed(2)} MiB per sandbox`,
    });
  }
  figure({
    id: 'density-sandbox-mem',
    name: 'one idle sandbox container, cgroup memory (sidecar + container overhead)',
    unit: 'MiB',
    n: mem.length,
    median: m,
    p99: p99(mem),
  });
}

const run = new BenchRun('density');
try {
  await main(run);
} catch (e) {
  console.error(`density bench failed: ${(e as Error).stack ?? e}`);
  if (run.ops.length) console.error(`operator logs kept in ${run.keptLogs()}`);
  process.exitCode = 1;
} finally {
  await run.cleanup();
}
