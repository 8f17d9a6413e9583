// Benchmark: what the owner channel (TEE mode) adds over the plain sidecar path, on real sidecar
// processes in this one process (no network): exec of `true`, and a streamed agent run (SSE, ten
// lines from SANDBOX_AGENT_COMMAND) read to its end. Floor: the same call on a plain sidecar with
// its bearer token. The channel's side includes HPKE encapsulation, the enclave's owner check
// (SIWE verified once per session, then cached), the loopback hop and chunk sealing/opening.
// Besides wall-clock medians/p99s and their ratio, it reports this process's CPU time per call
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
/** Wall-clock per call, and this process's CPU per call (client and sidecar both run here). */
const cpuPerCall = new Map<number[], number>();
async function time(fn: () => Promise<unknown>, n = N): Promise<number[]> {
  for (let k = 0; k < Math.min(10, n); k++) await fn();
  const out: number[] = [];
  const c0 = process.cpuUsage();
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  const c = process.cpuUsage(c0);
  cpuPerCall.set(out, (c.user + c.system) / 1000 / n);
  return out;
}
const line = (name: string, xs: number[], floor: number[]) =>
  console.log(
    `${name.padEnd(30)} median ${q(xs, 0.5).toFixed(2)} ms  p99 ${q(xs, 0.99).toFixed(2)} ms  ` +
      `plain median ${q(floor, 0.5).toFixed(2)} ms p99 ${q(floor, 0.99).toFixed(2)} ms  ` +
      `added ${(q(xs, 0.5) - q(floor, 0.5)).toFixed(2)} ms  ratio ${(q(xs, 0.5) / q(floor, 0.5)).toFixed(2)}  ` +
      `cpu/call ${cpuPerCall.get(xs)!.toFixed(2)} vs ${cpuPerCall.get(floor)!.toFixed(2)} ms  (n=${xs.length})`,
  );

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
  });
  const agent = 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done';
  await client.json('PUT', '/env', { env: { SANDBOX_AGENT_COMMAND: agent } });
  await plain.call('PUT', '/env', { env: { SANDBOX_AGENT_COMMAND: agent } });

  // The channel alone: a route that does no work (GET /health), so the difference is the channel's.
  const healthPlain = await time(() => plain.call('GET', '/health'));
  const healthChan = await time(() => client.json('GET', '/health'));
  line('GET /health (no work)', healthChan, healthPlain);

  const execPlain = await time(() => plain.call('POST', '/terminals/commands', { command: 'true' }));
  const execChan = await time(() => client.json('POST', '/terminals/commands', { command: 'true' }));
  line('exec `true`', execChan, execPlain);

  const streamPlain = await time(async () => {
    const r = await fetch(`${plain.sidecar.url}/agents/run/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${plain.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi' }),
    });
    // A bench that measures a 400 measures nothing: the run must have streamed its lines.
    if (!(await r.text()).includes('line10')) throw new Error('the plain stream did not run the agent');
  });
  const streamChan = await time(async () => {
    const r = await client.send('POST', '/agents/run/stream', { message: 'hi' });
    let text = '';
    for await (const c of r.body) text += Buffer.from(c).toString();
    if (!text.includes('line10')) throw new Error('the channel stream did not run the agent');
  });
  line('streamed run (10 lines, SSE)', streamChan, streamPlain);
} finally {
  await tee.close();
  await plain.close();
  await dstack.close();
  await rm(dir, { recursive: true, force: true });
}
