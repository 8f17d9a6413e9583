// Benchmark: what the owner channel (TEE mode) adds over the plain sidecar path, on real sidecar
// processes in this one process (no network): exec of `true`, and a streamed agent run (SSE, ten
// lines from SANDBOX_AGENT_COMMAND) read to its end. Floor: the same call on a plain sidecar with
// its bearer token. The channel's side includes HPKE encapsulation, the enclave's owner check
// (SIWE verified once per session, then cached), the loopback hop and chunk sealing/opening.
// Plain and channel calls alternate pair by pair (order swapped every pair), so drift in heap size
// or machine load falls on both sides alike. Besides wall-clock medians/p99s, their difference, the
// median of the per-pair differences and their ratio, it reports this process's CPU time per call
// (client + sidecar run here): on a loaded machine wall-clock added ≈ CPU added × contention.
// Run: npx tsx bench/tee-channel.bench.ts [--n 200]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextString } from '@agent-sandbox/attestation';
import { ownerChannel, startFakeDstack, startSidecarFixture } from '@agent-sandbox/sidecar/testing';
import { privateKeyToAccount } from 'viem/accounts';

const i = process.argv.indexOf('--n');
const N = i > 0 ? Number(process.argv[i + 1]) : 200;
const q = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** One side of an A/B: wall-clock and this process's CPU (client and sidecar both run here), per call. */
interface Side {
  wall: number[];
  cpu: number[];
}
async function once(fn: () => Promise<unknown>, into: Side): Promise<void> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  into.wall.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  into.cpu.push((c.user + c.system) / 1000);
}
/**
 * Plain and channel calls interleaved pair by pair, the order swapped every pair (P C, C P, P C, …),
 * so both sides see the same heap (a fork's cost grows with it), the same warm caches and the same
 * machine load; timing all of one side first and then the other charged drift to the later side.
 */
async function ab(
  plainFn: () => Promise<unknown>,
  chanFn: () => Promise<unknown>,
  n = N,
): Promise<{ plain: Side; chan: Side; diff: number[] }> {
  const warm: Side = { wall: [], cpu: [] };
  for (let k = 0; k < Math.min(10, n); k++) {
    await once(plainFn, warm);
    await once(chanFn, warm);
  }
  const plain: Side = { wall: [], cpu: [] };
  const chan: Side = { wall: [], cpu: [] };
  for (let k = 0; k < n; k++) {
    if (k % 2 === 0) {
      await once(plainFn, plain);
      await once(chanFn, chan);
    } else {
      await once(chanFn, chan);
      await once(plainFn, plain);
    }
  }
  return { plain, chan, diff: chan.wall.map((w, k) => w - plain.wall[k]!) };
}
const f = (x: number) => x.toFixed(2);
function line(name: string, r: Awaited<ReturnType<typeof ab>>): void {
  const { plain, chan, diff } = r;
  console.log(
    `${name.padEnd(30)} median ${f(q(chan.wall, 0.5))} ms  p99 ${f(q(chan.wall, 0.99))} ms  ` +
      `plain median ${f(q(plain.wall, 0.5))} ms p99 ${f(q(plain.wall, 0.99))} ms  ` +
      `added ${f(q(chan.wall, 0.5) - q(plain.wall, 0.5))} ms (pairwise median ${f(q(diff, 0.5))})  ` +
      `ratio ${f(q(chan.wall, 0.5) / q(plain.wall, 0.5))}  ` +
      `cpu/call ${f(sum(chan.cpu) / chan.cpu.length)} vs ${f(sum(plain.cpu) / plain.cpu.length)} ms  (n=${chan.wall.length} pairs)`,
  );
}

const owner = privateKeyToAccount(`0x${'77'.repeat(32)}`);
const sandboxId = `sbx-${'9'.repeat(32)}`;
const ctx = contextString({
  chainId: 1,
  serviceId: 1,
  sandboxId,
  operator: `0x${'88'.repeat(20)}`,
  owner: owner.address,
});
const dir = await mkdtemp(join(tmpdir(), 'bench-channel-'));
const dstack = await startFakeDstack(join(dir, 'dstack.sock'));
const tee = await startSidecarFixture({
  SIDECAR_TEE: 'dstack',
  SIDECAR_TEE_CONTEXT: ctx,
  SIDECAR_DSTACK_SOCKET: dstack.socketPath,
});
const plain = await startSidecarFixture();
try {
  const pk = await tee.call('GET', `/tee/public-key?nonce=${randomBytes(32).toString('hex')}`);
  const { client } = ownerChannel({
    url: tee.sidecar.url,
    operatorToken: tee.token,
    pubkeyHex: pk.json.pubkey,
    ctx,
    owner,
    // Relay as the operator API does: no copy of every byte (a test's wire capture tees the stream
    // and keeps it, which grows the heap on the channel side only).
    keepWire: false,
  });
  const agent = 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done';
  await client.json('PUT', '/env', { env: { SANDBOX_AGENT_COMMAND: agent } });
  await plain.call('PUT', '/env', { env: { SANDBOX_AGENT_COMMAND: agent } });

  // The channel alone: a route that does no work (GET /health), so the difference is the channel's.
  line(
    'GET /health (no work)',
    await ab(
      () => plain.call('GET', '/health'),
      () => client.json('GET', '/health'),
    ),
  );
  line(
    'exec `true`',
    await ab(
      () => plain.call('POST', '/terminals/commands', { command: 'true' }),
      () => client.json('POST', '/terminals/commands', { command: 'true' }),
    ),
  );
  const streamPlain = async () => {
    const r = await fetch(`${plain.sidecar.url}/agents/run/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${plain.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi' }),
    });
    // A bench that measures a 400 measures nothing: the run must have streamed its lines.
    if (!(await r.text()).includes('line10')) throw new Error('the plain stream did not run the agent');
  };
  const streamChan = async () => {
    const r = await client.send('POST', '/agents/run/stream', { message: 'hi' });
    let text = '';
    for await (const c of r.body) text += Buffer.from(c).toString();
    if (!text.includes('line10')) throw new Error('the channel stream did not run the agent');
  };
  line('streamed run (10 lines, SSE)', await ab(streamPlain, streamChan));
} finally {
  await tee.close();
  await plain.close();
  await dstack.close();
  await rm(dir, { recursive: true, force: true });
}
