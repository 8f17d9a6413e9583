// kill -9 in the middle of a burst: the operator runs as a child process (testing/echo-operator.ts),
// is SIGKILLed, jobs keep coming while it is down, and a restart answers every job exactly once.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobCursor } from './job-cursor.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { resultsByCall, submitJobs, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
const children = new Set<ChildProcess>();
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await chain?.stop();
});

function startOperator(env: Record<string, string>): Promise<ChildProcess> {
  // `node --import tsx`, not the tsx CLI: the CLI runs the script in a grandchild that a SIGKILL
  // of the CLI would orphan (still running), which would fake the crash.
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, './testing/echo-operator.ts')],
    {
      cwd: join(import.meta.dirname, '../..'),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += String(d);
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      if (String(d).includes('READY')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`operator exited (${code}) before READY: ${stderr}`)));
  });
}

const exited = (c: ChildProcess) =>
  new Promise<number | null>((r) =>
    c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code)),
  );

describe('runner crash recovery (child process, SIGKILL)', () => {
  it('after kill -9 and a restart, every job has exactly one result and no answered job is handled again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-crash-'));
    const handledLog = join(dir, 'handled.log');
    const env = {
      HTTP_RPC_URL: chain.rpcUrl,
      DATA_DIR: join(dir, 'data'),
      KEYSTORE_URI: await writeDevKey(join(dir, 'keystore'), chain.operators[0]),
      TEST_MODE: 'true',
      BLUEPRINT_ID: `${chain.blueprintId}`,
      SERVICE_ID: `${chain.serviceId}`,
      TANGLE_CONTRACT: chain.tangle,
      START_BLOCK: `${await chain.client.getBlockNumber()}`,
      HANDLED_LOG: handledLog,
      ECHO_DELAY_MS: '60',
    };
    const first = await startOperator({ ...env, RUN_TAG: 'first' });

    // A burst of 40; SIGKILL once some (not all) of them are answered.
    const burst = submitJobs(
      chain,
      0,
      Array.from({ length: 40 }, (_, i) => toHex(`a${i}`)),
    );
    const t0 = Date.now();
    for (;;) {
      const n = (await resultsByCall(chain)).size;
      if (n >= 8) break;
      if (Date.now() - t0 > 60_000) throw new Error(`only ${n} results before the kill`);
      await new Promise((r) => setTimeout(r, 15));
    }
    first.kill('SIGKILL');
    await exited(first);
    const killBlock = await chain.client.getBlockNumber();
    const answeredBeforeKill = new Set((await resultsByCall(chain)).keys());
    const idsA = await burst;
    expect(answeredBeforeKill.size).toBeLessThan(idsA.length); // the kill really was mid-burst

    // Jobs submitted while the operator is down.
    const idsB = await submitJobs(
      chain,
      0,
      Array.from({ length: 15 }, (_, i) => toHex(`b${i}`)),
    );
    const all = [...idsA, ...idsB];

    const second = await startOperator({ ...env, RUN_TAG: 'second' });
    const t1 = Date.now();
    for (;;) {
      const answered = await resultsByCall(chain);
      if (all.every((id) => answered.has(id))) break;
      if (Date.now() - t1 > 90_000) throw new Error('not every job was answered after the restart');
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500)); // room for any duplicate to show up
    second.kill('SIGTERM');
    expect(await exited(second)).toBe(0);

    const results = await resultsByCall(chain);
    for (const id of all) {
      expect(results.get(id)?.length, `results for call ${id}`).toBe(1);
      expect(results.get(id)![0]!.operator).toBe(chain.operators[0].address);
    }
    const lines = (await readFile(handledLog, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const handledSecond = new Set(lines.filter(([t]) => t === 'second').map(([, id]) => BigInt(id!)));
    const handledFirst = lines.filter(([t]) => t === 'first').map(([, id]) => BigInt(id!));
    for (const id of answeredBeforeKill)
      expect(handledSecond.has(id), `call ${id} answered before the kill, redone`).toBe(false);
    for (const id of idsB) expect(handledFirst.includes(id)).toBe(false);
    // No call handled twice within one run.
    expect(new Set(handledFirst).size).toBe(handledFirst.length);
    expect(handledSecond.size).toBe(lines.filter(([t]) => t === 'second').length);

    // The graceful stop left the cursor past every job, nothing pending.
    const cursor = await JobCursor.open(
      env.DATA_DIR,
      { chainId: chain.chainId, tangle: chain.tangle, serviceId: chain.serviceId },
      async () => 0n,
    );
    expect(cursor.pendingTxs).toEqual([]);
    expect(cursor.position.block).toBeGreaterThan(killBlock);
  });
});
