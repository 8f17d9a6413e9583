// Benchmark: a fleet through the protocol. On a private devnet, F operator programs (the bundle
// users run, blueprint-bin/dist/main.mjs, each with its own key, DATA_DIR and API port; here they
// share the one Docker engine) stake, register on the cloud blueprint with capacities C1..CF
// (their own role commands) and serve one cloud service the service owner requested and each
// approved (bench/lib/fleet.ts). Then:
// (1) spread: N creates submitted back to back, held until the end: every create ready (one result
//     each, state running, from the operator OperatorAssigned named), each operator's count next to
//     the capacity ratio within a tolerance derived from the assignment's randomness (hypergeometric,
//     3 sd: bench/lib/fleet.ts spreadTolerance; 0 when N fills the fleet), the wall time first
//     submit -> last result; all deleted;
// (2) kill: K creates in two halves; after the first half, once the victim (the largest operator)
//     has finished at least one create and has others unfinished, it is killed with SIGKILL; the
//     second half is submitted while it is down (the contract does not know it is down: it
//     assigns by free capacity, so some may go to it: counted, next to the expected share); once
//     every other operator's create is ready the victim is started again (same DATA_DIR, secret,
//     port) and every call must end with exactly one result: none lost, none doubled, no result
//     ignored, and its containers exactly its assigned creates;
// (3) the 1-operator run: one operator with the fleet's whole capacity on a service of its own,
//     the same N creates, wall time: the fleet's floor in the same run.
// --health-timeout-ms MS: each operator's SANDBOX_HEALTH_TIMEOUT_MS (its default 30 s is short for
// tens of containers starting at once on one 2-core engine; the fleet, not the engine, is measured).
// Run: npx tsx bench/fleet.bench.ts [--creates 100] [--capacities 10,20,30,40] [--kill-creates 40] [--no-solo] [--health-timeout-ms MS]
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { type Address, type Hex, isAddressEqual } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  JOB_SANDBOX_CREATE,
} from '../client/index.ts';
import { Chain } from './lib/chain.ts';
import { figure, median, p99 } from './lib/figures.ts';
import { callFacts, type FleetMember, setUpFleet, spreadTolerance } from './lib/fleet.ts';
import { BenchRun, buildBins, type Op } from './lib/operators.ts';

const exec = promisify(execFile);
const opt = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const CREATES = Number(opt('creates') ?? 100);
const CAPACITIES = (opt('capacities') ?? '10,20,30,40').split(',').map(Number);
const KILL_CREATES = Number(opt('kill-creates') ?? 40);
const SOLO = !process.argv.includes('--no-solo');
const HEALTH_TIMEOUT_MS = opt('health-timeout-ms');
const TOTAL = CAPACITIES.reduce((a, b) => a + b, 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const run = new BenchRun('fleet-bench');

const inputs = (tag: string) =>
  encodeCreateInput(buildCreateRequest({ name: tag, cpu_cores: 1, memory_mb: 128, disk_gb: 1 }));

interface Fleet {
  chain: Chain;
  members: FleetMember[];
  ops: Op[];
}

/** Stakes, registers and serves `caps` (key indexes from `firstKey`), one operator program each. */
async function startFleet(image: string, names: string[], caps: number[], firstKey: number): Promise<Fleet> {
  const info = run.devnet!.info;
  const { serviceId, members } = await setUpFleet(
    info,
    run.work,
    names.map((name, i) => ({ name, keyIndex: firstKey + i, capacity: caps[i]! })),
    (l) => process.stderr.write(`[fleet] ${l}\n`),
  );
  const ops = await Promise.all(
    members.map((m) =>
      run.startOperator(
        m.name,
        image,
        {
          OPERATOR_MAX_CAPACITY: `${m.capacity}`,
          ...(HEALTH_TIMEOUT_MS ? { SANDBOX_HEALTH_TIMEOUT_MS: HEALTH_TIMEOUT_MS } : {}),
        },
        'bundle',
        {
          privateKey: m.privateKey,
          serviceId,
          port: m.port,
        },
      ),
    ),
  );
  const chain = new Chain(info, privateKeyToAccount(info.accounts.user.privateKey), serviceId);
  return { chain, members, ops };
}

/** The sandbox id of a create result, or why it is not a ready sandbox. */
function readySandbox(output: Hex): { id?: string; why?: string } {
  const out = decodeCreateOutput(output);
  if (!out.sandboxId) return { why: `failed: ${JSON.stringify(out.json).slice(0, 200)}` };
  if (out.json['state'] !== 'running') return { why: `state ${String(out.json['state'])}` };
  return { id: out.sandboxId };
}

/** Every call ended with exactly one result, from its assigned operator, a running sandbox. */
async function checkCalls(f: Fleet, calls: bigint[], fromBlock: bigint) {
  const facts = await callFacts(f.chain.pub, f.chain.info, f.chain.service, fromBlock);
  const problems: string[] = [];
  const ids: string[] = [];
  const byOperator = new Map<string, number>();
  for (const c of calls) {
    const rs = facts.results.get(c) ?? [];
    const to = facts.assigned.get(c);
    if (rs.length !== 1) problems.push(`call ${c}: ${rs.length} results`);
    if (!rs[0]) continue;
    if (!to || !isAddressEqual(rs[0].operator, to)) problems.push(`call ${c}: result not from its assignee`);
    const r = readySandbox(rs[0].output);
    if (r.id) ids.push(r.id);
    else problems.push(`call ${c}: ${r.why}`);
    const name = f.members.find((m) => to && isAddressEqual(m.address, to))?.name ?? `${to}`;
    byOperator.set(name, (byOperator.get(name) ?? 0) + 1);
  }
  if (facts.ignored) problems.push(`${facts.ignored} result(s) ignored by the blueprint`);
  return { problems, ids, byOperator, assigned: facts.assigned };
}

/** N creates back to back; resolves when every result is in: wall time and per-create latencies. */
async function burst(f: Fleet, n: number, tag: string) {
  const fromBlock = await f.chain.pub.getBlockNumber();
  const t0 = performance.now();
  const subs = [];
  for (let i = 0; i < n; i++) subs.push(await f.chain.submit(JOB_SANDBOX_CREATE, inputs(`${tag}-${i}`)));
  const calls = subs.map((x) => x.callId);
  const res = await f.chain.results(calls, fromBlock, 1_200_000);
  const wall = Math.max(...[...res.values()].map((r) => r.seenAt)) - t0;
  const latency = subs.map((x) => res.get(x.callId)!.seenAt - x.minedAt);
  return { calls, fromBlock, wall, latency, ...(await checkCalls(f, calls, fromBlock)) };
}

/** Containers (sandboxes, not the warm pool) the operator `op` runs on the engine now. */
async function containersOf(op: Op): Promise<number> {
  const { stdout } = await exec('docker', [
    'ps',
    '-aq',
    '--filter',
    `label=${run.label}`,
    '--filter',
    `label=agent-sandbox.operator=${op.env['OPERATOR_ID']}`,
    '--filter',
    'label=agent-sandbox.kind=sandbox',
  ]);
  return stdout.split('\n').filter(Boolean).length;
}

async function killRun(f: Fleet) {
  const fromBlock = await f.chain.pub.getBlockNumber();
  const half = Math.ceil(KILL_CREATES / 2);
  const first: bigint[] = [];
  for (let i = 0; i < half; i++)
    first.push((await f.chain.submit(JOB_SANDBOX_CREATE, inputs(`kill-a-${i}`))).callId);
  // The victim: the operator the first half gave the most creates (the largest, by its weight).
  const at0 = await callFacts(f.chain.pub, f.chain.info, f.chain.service, fromBlock);
  const count = (m: FleetMember) =>
    first.filter((c) => {
      const to = at0.assigned.get(c);
      return to && isAddressEqual(to, m.address);
    }).length;
  const victimIdx = f.members.reduce((best, m, i) => (count(m) > count(f.members[best]!) ? i : best), 0);
  const victim = f.members[victimIdx]!;
  const op = f.ops[victimIdx]!;
  // Mid-run: the victim has finished one of its creates and has others still building (or, if it
  // finished them all before that was seen, it is killed all the same).
  let unfinished: bigint[] = [];
  for (const deadline = Date.now() + 900_000; ; ) {
    const facts = await callFacts(f.chain.pub, f.chain.info, f.chain.service, fromBlock);
    const mine = first.filter((c) => {
      const to = facts.assigned.get(c);
      return to && isAddressEqual(to, victim.address);
    });
    unfinished = mine.filter((c) => !facts.results.has(c));
    if (mine.length - unfinished.length >= 1) break;
    if (Date.now() > deadline) throw new Error(`${victim.name} finished none of its ${mine.length} creates`);
    await sleep(100);
  }
  op.killedOnPurpose = true;
  op.child.kill('SIGKILL');
  await new Promise((r) =>
    op.child.exitCode !== null || op.child.signalCode ? r(null) : op.child.once('exit', r),
  );
  const killedAt = performance.now();
  // The contract's view when the second half goes out: the victim's share of the free slots.
  const freeAtKill = await freeSlots(f);
  const second: bigint[] = [];
  for (let i = 0; i < KILL_CREATES - half; i++)
    second.push((await f.chain.submit(JOB_SANDBOX_CREATE, inputs(`kill-b-${i}`))).callId);
  const all = [...first, ...second];
  const facts = await callFacts(f.chain.pub, f.chain.info, f.chain.service, fromBlock);
  const isVictim = (c: bigint) => isAddressEqual(facts.assigned.get(c)!, victim.address);
  const toVictim = second.filter(isVictim);
  // Everyone else finishes while the victim is down; then it comes back.
  await f.chain.results(
    all.filter((c) => !isVictim(c)),
    fromBlock,
    1_200_000,
  );
  const downFor = performance.now() - killedAt;
  const r0 = performance.now();
  await run.restartOperator(op);
  await f.chain.results(all, fromBlock, 1_200_000);
  const afterRestart = performance.now() - r0;
  const checked = await checkCalls(f, all, fromBlock);
  const victimCalls = all.filter(isVictim).length;
  const containers = await containersOf(op);
  if (containers !== victimCalls)
    checked.problems.push(`${victim.name} runs ${containers} sandbox containers for ${victimCalls} creates`);
  return {
    victim,
    unfinished: unfinished.length,
    toVictim: toVictim.length,
    second: second.length,
    expectedToVictim: (second.length * freeAtKill.victim(victim.address)) / freeAtKill.total,
    downFor,
    afterRestart,
    ...checked,
  };
}

/** Free slots per operator as the blueprint counts them (capacity − active − reserved). */
async function freeSlots(f: Fleet) {
  const free = new Map<string, number>();
  for (const m of f.members) {
    const [, , , avail] = await loadOf(f, m.address);
    free.set(m.address.toLowerCase(), avail);
  }
  const total = [...free.values()].reduce((a, b) => a + b, 0);
  return { total, victim: (a: Address) => free.get(a.toLowerCase()) ?? 0 };
}

async function loadOf(f: Fleet, operator: Address): Promise<[number, number, number, number]> {
  const [active, reserved, capacity] = await f.chain.pub.readContract({
    address: f.chain.info.contracts.cloud as Address,
    abi: agentSandboxBlueprintAbi,
    functionName: 'getOperatorLoad',
    args: [operator],
  });
  return [capacity, active, reserved, Math.max(0, capacity - active - reserved)];
}

async function main(): Promise<void> {
  if (CAPACITIES.some((c) => !Number.isInteger(c) || c < 1))
    throw new Error('--capacities: whole numbers >= 1');
  if (CREATES > TOTAL || KILL_CREATES > TOTAL)
    throw new Error(
      `--creates ${CREATES} / --kill-creates ${KILL_CREATES} exceed the fleet's capacity ${TOTAL}`,
    );
  console.log(`load average at start: ${load()}`);
  const { tag: image } = await ensureSandboxImage({
    onProgress: (l) => process.stderr.write(`[image] ${l}\n`),
  });
  buildBins('operator');
  await run.startDevnet();
  const names = CAPACITIES.map((_, i) => `fleet-${i + 1}`);
  const fleet = await startFleet(image, names, CAPACITIES, 5);

  // (1) spread and throughput.
  const a = await burst(fleet, CREATES, 'spread');
  if (a.problems.length) throw new Error(`spread run:\n  ${a.problems.join('\n  ')}`);
  console.log(
    `\nfleet of ${CAPACITIES.length} (capacities ${CAPACITIES.join('/')}, one engine), ${CREATES} creates held: all ready, one result each, in ${s(a.wall)} (${((CREATES / a.wall) * 1000).toFixed(2)} creates/s); create -> result median ${s(median(a.latency))}, p99 ${s(p99(a.latency))}`,
  );
  let spreadOk = true;
  for (const [i, m] of fleet.members.entries()) {
    const got = a.byOperator.get(m.name) ?? 0;
    const { mean, tol } = spreadTolerance(CREATES, CAPACITIES[i]!, TOTAL);
    const ok = Math.abs(got - mean) <= tol;
    spreadOk &&= ok;
    console.log(
      `  ${m.name} capacity ${m.capacity}: ${got} creates (expected ${mean.toFixed(1)} ± ${tol}) ${ok ? 'ok' : 'OUTSIDE'}`,
    );
  }
  await fleet.chain.deleteAll(a.ids);

  // (2) one operator killed mid-run.
  const k = await killRun(fleet);
  console.log(
    `kill -9 of ${k.victim.name} mid-run (${KILL_CREATES} creates in two halves): ${k.unfinished} of its creates unfinished at the kill; ` +
      `of the ${k.second} creates sent while it was down, ${k.second - k.toVictim} went to the others and ${k.toVictim} to it ` +
      `(expected ${k.expectedToVictim.toFixed(1)}: its share of the free slots, the contract has no liveness); it was down ${s(k.downFor)}, ` +
      `its creates all had their result ${s(k.afterRestart)} after its restart; ${k.problems.length ? `PROBLEMS:\n  ${k.problems.join('\n  ')}` : 'every call exactly one result, none ignored, its containers = its creates'}`,
  );
  await fleet.chain.deleteAll(k.ids);
  figure({
    id: 'fleet-kill',
    name: `fleet: ${KILL_CREATES} creates, one operator killed -9 mid-run and restarted: calls without exactly one ready result`,
    unit: 'count',
    n: KILL_CREATES,
    median: KILL_CREATES - k.ids.length,
    note: `${k.toVictim} of ${k.second} creates sent while it was down went to it (expected ${k.expectedToVictim.toFixed(1)}), answered after its restart`,
  });
  if (k.problems.length) process.exitCode = 1;

  // (3) the 1-operator floor.
  let solo: Awaited<ReturnType<typeof burst>> | undefined;
  if (SOLO) {
    for (const op of fleet.ops) await run.stopOperator(op);
    const one = await startFleet(image, ['solo'], [TOTAL], 5 + CAPACITIES.length);
    solo = await burst(one, CREATES, 'solo');
    if (solo.problems.length) throw new Error(`solo run:\n  ${solo.problems.join('\n  ')}`);
    console.log(
      `1 operator (capacity ${TOTAL}), same ${CREATES} creates: ${s(solo.wall)} (${((CREATES / solo.wall) * 1000).toFixed(2)} creates/s); create -> result median ${s(median(solo.latency))}, p99 ${s(p99(solo.latency))}`,
    );
    console.log(
      `fleet / 1 operator wall time: ${(a.wall / solo.wall).toFixed(2)}x (all operators share one engine and 2 cores here)`,
    );
    await one.chain.deleteAll(solo.ids);
  }
  figure({
    id: 'fleet-creates',
    name: `fleet of ${CAPACITIES.length} (${CAPACITIES.join('/')}): ${CREATES} creates submitted back to back -> all ready`,
    unit: 'ms',
    n: CREATES,
    median: a.wall,
    ...(solo ? { floor: { name: `1 operator, capacity ${TOTAL}, same creates`, median: solo.wall } } : {}),
    note: `spread ${fleet.members.map((m) => `${m.name} ${a.byOperator.get(m.name) ?? 0}`).join(', ')} ${spreadOk ? 'within' : 'OUTSIDE'} the hypergeometric 3-sd tolerance`,
  });
  if (!spreadOk) process.exitCode = 1;
  console.log(`load average at end: ${load()}`);
}

main()
  .catch((e) => {
    console.error(`fleet bench failed: ${(e as Error).stack ?? e}`);
    if (run.ops.length) console.error(`operator logs kept in ${run.keptLogs()}`);
    process.exitCode = 1;
  })
  .finally(() => run.cleanup());
