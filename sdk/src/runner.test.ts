// The runner against a real anvil: a private toy service (see testing/toy-chain.ts).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { encodeAbiParameters, type Hex, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SubmitOutcome } from './consumer.ts';
import { isSdkError } from './errors.ts';
import { decodeJobResult, jobResult } from './job-abi.ts';
import { type JobRouter, router, SKIP } from './job-router.ts';
import { loadKeystore } from './keystore.ts';
import { type BlueprintRunner, createRunner, type RunnerOptions } from './runner.ts';
import { fetchJobSubmitted } from './tangle-events.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => chain?.stop());

function memoryLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(c, _e, cb) {
        for (const l of String(c).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    }),
  );
  return { log, lines };
}

async function startRunner(op: 0 | 1, r: JobRouter, extra: Partial<RunnerOptions> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'sdk-runner-'));
  const key = await loadKeystore({
    uri: await writeDevKey(join(dir, 'keystore'), chain.operators[op]),
    testMode: true,
  });
  const { log, lines } = memoryLogger();
  const outcomes = new Map<bigint, SubmitOutcome | 'skipped'>();
  const runner: BlueprintRunner = createRunner({
    router: r,
    key,
    httpRpcUrl: chain.rpcUrl,
    tangle: chain.tangle,
    serviceId: chain.serviceId,
    dataDir: join(dir, 'data'),
    pollIntervalMs: 100,
    logger: log,
    onJobDone: (e, o) => outcomes.set(e.callId, o),
    ...extra,
  });
  await runner.start();
  return { runner, lines, outcomes, dir };
}

async function until(cond: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const echo = () =>
  router().route(0, (input) => jobResult([{ name: 'echo', type: 'bytes' }], { echo: input }));
const echoed = (out: Hex) => decodeJobResult([{ name: 'echo', type: 'bytes' }], out).echo;

describe('runner on a real chain', () => {
  it('answers a burst of 50 jobs, each with exactly one result on chain', async () => {
    const { runner, outcomes } = await startRunner(0, echo(), { wsRpcUrl: chain.wsUrl });
    try {
      const inputs = Array.from({ length: 50 }, (_, i) => toHex(`job-${i}`));
      const ids = await submitJobs(chain, 0, inputs);
      await until(() => ids.every((id) => outcomes.has(id)));
      const results = await resultsByCall(chain);
      ids.forEach((id, i) => {
        const rs = results.get(id) ?? [];
        expect(rs.length, `call ${id}`).toBe(1);
        expect(rs[0]!.operator).toBe(chain.operators[0].address);
        expect(echoed(rs[0]!.output)).toBe(inputs[i]);
        expect(outcomes.get(id)).toBe('submitted');
      });
    } finally {
      await runner.stop();
    }
    expect(runner.cursor!.inFlightCount).toBe(0);
  });

  it('retries a handler that throws (a transient failure) and answers the call once; gives up after the last attempt', async () => {
    const tries = new Map<string, number>();
    const flaky = router().route(0, (input) => {
      const n = (tries.get(input) ?? 0) + 1;
      tries.set(input, n);
      if (input === toHex('always-fails')) throw new Error('RPC unavailable');
      if (n < 3) throw new Error(`transient failure ${n}`);
      return jobResult([{ name: 'echo', type: 'bytes' }], { echo: input });
    });
    const { runner, outcomes, lines } = await startRunner(0, flaky, { handlerRetryDelayMs: 50 });
    try {
      const [recovers, fails] = await submitJobs(chain, 0, [toHex('recovers'), toHex('always-fails')]);
      await until(() => outcomes.has(recovers!) && outcomes.has(fails!));
      expect(outcomes.get(recovers!)).toBe('submitted');
      expect(tries.get(toHex('recovers'))).toBe(3);
      expect((await resultsByCall(chain)).get(recovers!)?.length).toBe(1);
      expect(outcomes.get(fails!)).toBe('skipped');
      expect(tries.get(toHex('always-fails'))).toBe(3);
      expect(lines.some((l) => l['msg'] === 'handler failed on every attempt; skipping the call')).toBe(true);
    } finally {
      await runner.stop();
    }
  });

  it('decodes flat and tuple inputs to the same value, and skips a malformed input without stopping', async () => {
    const schema = [
      { name: 'name', type: 'string' },
      { name: 'count', type: 'uint32' },
      { name: 'owner', type: 'address' },
    ] as const;
    const out = [{ name: 'summary', type: 'string' }] as const;
    const r = router().route(1, { name: 'summarise', input: schema, output: out }, (arg) => ({
      summary: `${arg.name}/${arg.count}/${arg.owner}`,
    }));
    const { runner, lines, outcomes } = await startRunner(0, r);
    try {
      const value = ['box', 7, chain.caller.address] as const;
      const flat = encodeAbiParameters(schema, value);
      const tuple = encodeAbiParameters(
        [{ type: 'tuple', components: schema }],
        [{ name: value[0], count: value[1], owner: value[2] }],
      );
      expect(tuple).not.toBe(flat);
      const [a, bad, b] = await submitJobs(chain, 1, [flat, '0xdeadbeef', tuple]);
      const [unknown] = await submitJobs(chain, 9, ['0x']);
      await until(() => [a, bad, b, unknown].every((id) => outcomes.has(id!)));
      const results = await resultsByCall(chain);
      const summary = (id: bigint) => decodeJobResult(out, results.get(id)![0]!.output).summary;
      expect(summary(a!)).toBe(`box/7/${chain.caller.address}`);
      expect(summary(b!)).toBe(summary(a!));
      expect(results.has(bad!)).toBe(false);
      expect(outcomes.get(bad!)).toBe('skipped');
      expect(results.has(unknown!)).toBe(false);
      const err = lines.find((l) => l['callId'] === `${bad}` && l['level'] === 50);
      expect(err?.['msg']).toMatch(/does not decode/);
      expect(JSON.stringify(err)).toContain('job 1 (summarise)');
      expect(lines.some((l) => l['callId'] === `${unknown}` && /no handler/.test(String(l['msg'])))).toBe(
        true,
      );
    } finally {
      await runner.stop();
    }
  });

  it('with two operators only the answering one submits; a late second result counts as done', async () => {
    const lateMs = 400;
    // op1 answers even call ids; op2 answers odd ones at once and even ones late (after op1).
    const r1 = router().route(0, (input, ctx) => (ctx.callId % 2n === 0n ? input : SKIP));
    const r2 = router().route(0, async (input, ctx) => {
      if (ctx.callId % 2n === 0n) await new Promise((res) => setTimeout(res, lateMs));
      return input;
    });
    // afterJob sees each call's outcome with the handler's own output: what a blueprint needs to
    // record its outcome elsewhere when another operator's result completed the call.
    type Done = Parameters<NonNullable<RunnerOptions['afterJob']>>[0];
    const after1 = new Map<bigint, Done>();
    const after2 = new Map<bigint, Done>();
    const one = await startRunner(0, r1, { afterJob: async (d) => void after1.set(d.event.callId, d) });
    const two = await startRunner(1, r2, { afterJob: async (d) => void after2.set(d.event.callId, d) });
    // A third view of op2 without the getJobCall pre-check: a late result is recognised from the
    // decoded JobAlreadyCompleted revert instead.
    try {
      const ids = await submitJobs(
        chain,
        0,
        Array.from({ length: 8 }, (_, i) => toHex(i + 1, { size: 4 })),
      );
      await until(() => ids.every((id) => one.outcomes.has(id) && two.outcomes.has(id)));
      const results = await resultsByCall(chain);
      for (const id of ids) {
        const rs = results.get(id) ?? [];
        expect(rs.length, `call ${id}`).toBe(1);
        expect(rs[0]!.operator).toBe(chain.operators[id % 2n === 0n ? 0 : 1].address);
        expect(one.outcomes.get(id)).toBe(id % 2n === 0n ? 'submitted' : 'skipped');
        expect(two.outcomes.get(id)).toBe(id % 2n === 0n ? 'already-done' : 'submitted');
      }
      await until(() => ids.every((id) => after1.has(id) && after2.has(id)));
      for (const id of ids) {
        const late = after2.get(id)!;
        expect(late.outcome).toBe(id % 2n === 0n ? 'already-done' : 'submitted');
        expect(late.output).toBeDefined(); // its own output, even when another result won
        if (id % 2n === 1n)
          expect(after1.get(id)).toMatchObject({ outcome: 'skipped', skipReason: 'handler-skipped' });
      }
      expect(two.lines.some((l) => l['level'] === 50)).toBe(false);
    } finally {
      await Promise.all([one.runner.stop(), two.runner.stop()]);
    }
  });

  it('stop() aborts a handler past the grace period; the call is answered after a restart', async () => {
    let started = false;
    let sawAbort = false;
    const stuck = router().route(0, async (_input, ctx) => {
      started = true;
      await new Promise((_res, rej) =>
        ctx.signal.addEventListener('abort', () => {
          sawAbort = true;
          rej(new Error('aborted'));
        }),
      );
      return '0x' as Hex;
    });
    const first = await startRunner(0, stuck, { shutdownGraceMs: 200 });
    const [id] = await submitJobs(chain, 0, ['0x0b']);
    await until(() => started);
    await first.runner.stop();
    expect(sawAbort).toBe(true);
    expect(first.outcomes.has(id!)).toBe(false);
    expect((await resultsByCall(chain)).has(id!)).toBe(false);

    // Same DATA_DIR, a working handler: the unfinished call is picked up again.
    const second = createRunner({
      router: echo(),
      key: await loadKeystore({ uri: join(first.dir, 'keystore'), testMode: true }),
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      dataDir: join(first.dir, 'data'),
      pollIntervalMs: 100,
      logger: memoryLogger().log,
    });
    await second.start();
    try {
      await until(async () => (await resultsByCall(chain)).has(id!));
    } finally {
      await second.stop();
    }
    expect((await resultsByCall(chain)).get(id!)?.length).toBe(1);
  });

  it('refuses to start on an unreachable RPC or a cursor ahead of the chain, with typed errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-runner-'));
    const key = await loadKeystore({
      uri: await writeDevKey(join(dir, 'ks'), chain.operators[0]),
      testMode: true,
    });
    const base = {
      router: echo(),
      key,
      tangle: chain.tangle,
      serviceId: chain.serviceId,
      logger: memoryLogger().log,
    };
    const down = createRunner({ ...base, httpRpcUrl: 'http://127.0.0.1:1', dataDir: join(dir, 'a') });
    await expect(down.start()).rejects.toSatisfy((e) => isSdkError(e, 'RPC'));
    const ahead = createRunner({
      ...base,
      httpRpcUrl: chain.rpcUrl,
      dataDir: join(dir, 'b'),
      startBlock: 10n ** 12n,
    });
    await expect(ahead.start()).rejects.toSatisfy(
      (e) => isSdkError(e, 'CURSOR') && /chain was reset/.test(e.message),
    );
    const twice = createRunner({ ...base, httpRpcUrl: chain.rpcUrl, dataDir: join(dir, 'c') });
    await twice.start();
    await expect(twice.start()).rejects.toSatisfy((e) => isSdkError(e, 'RUNNER_STATE'));
    await twice.stop();
  });

  it('waits for the configured confirmations before taking a job', async () => {
    const { runner, outcomes } = await startRunner(0, echo(), { confirmations: 2 });
    try {
      const [a] = await submitJobs(chain, 0, ['0x0a']);
      const h0 = await chain.client.getBlockNumber({ cacheTime: 0 });
      const { events } = await fetchJobSubmitted(chain.client, chain.tangle, chain.serviceId, h0 - 3n, h0);
      const block = events.find((e) => e.callId === a)!.blockNumber;
      await new Promise((r) => setTimeout(r, 600)); // several polls
      // On the shared devnet other tests mine blocks too; the check holds while fewer than 2 came.
      if ((await chain.client.getBlockNumber({ cacheTime: 0 })) - block < 2n)
        expect(outcomes.has(a!)).toBe(false);
      // Two more blocks (other tests may add more; that only confirms sooner).
      await chain.client.request({ method: 'anvil_mine' as never, params: ['0x2'] as never });
      await until(() => outcomes.has(a!), 20_000);
      expect(outcomes.get(a!)).toBe('submitted');
    } finally {
      await runner.stop();
    }
  });

  it('recognises a completed call from the decoded revert when the pre-check is off', async () => {
    const slow = router().route(0, async (input) => {
      await new Promise((res) => setTimeout(res, 400));
      return input;
    });
    const fast = await startRunner(
      0,
      router().route(0, (input) => input),
    );
    const late = await startRunner(1, slow, { precheckCompleted: false });
    try {
      const [id] = await submitJobs(chain, 0, ['0x01']);
      await until(() => fast.outcomes.has(id!) && late.outcomes.has(id!));
      expect(fast.outcomes.get(id!)).toBe('submitted');
      expect(late.outcomes.get(id!)).toBe('already-done');
      expect(late.lines.some((l) => l['reason'] === 'JobAlreadyCompleted')).toBe(true);
      expect((await resultsByCall(chain)).get(id!)?.length).toBe(1);
    } finally {
      await Promise.all([fast.runner.stop(), late.runner.stop()]);
    }
  });
});
