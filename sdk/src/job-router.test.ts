import { Writable } from 'node:stream';
import pino from 'pino';
import { encodeAbiParameters, type Hex, zeroAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { isSdkError } from './errors.ts';
import { decodeJobResult } from './job-abi.ts';
import { type JobContext, router, SKIP } from './job-router.ts';

function ctx(jobIndex: number): { ctx: JobContext; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(c, _e, cb) {
        out.push(String(c));
        cb();
      },
    }),
  ).child({ callId: '9' });
  return {
    ctx: {
      serviceId: 1n,
      callId: 9n,
      jobIndex,
      caller: zeroAddress,
      blockNumber: 5n,
      transactionHash: undefined,
      log,
      signal: new AbortController().signal,
    },
    lines: () => out.map((l) => JSON.parse(l)),
  };
}

const input = [
  { name: 'name', type: 'string' },
  { name: 'n', type: 'uint32' },
] as const;
const output = [{ name: 'greeting', type: 'string' }] as const;

describe('router', () => {
  const r = router()
    .route(0, (bytes) => bytes)
    .route(1, { name: 'greet', input, output }, (arg) => ({ greeting: `hi ${arg.name} x${arg.n}` }))
    .route(2, { input }, (arg) => (arg.n === 0 ? SKIP : undefined))
    .route(3, { input }, () => {
      throw new Error('boom');
    });

  it('routes raw and typed handlers and encodes typed results as one tuple', async () => {
    const a = await r.dispatch({ jobIndex: 0, input: '0xabcd' }, ctx(0).ctx);
    expect(a).toEqual({ kind: 'result', output: '0xabcd' });
    const b = await r.dispatch({ jobIndex: 1, input: encodeAbiParameters(input, ['bob', 2]) }, ctx(1).ctx);
    expect(b.kind).toBe('result');
    expect(decodeJobResult(output, (b as { output: Hex }).output)).toEqual({ greeting: 'hi bob x2' });
  });

  it('turns skip markers, unknown jobs, bad input and handler errors into logged skips', async () => {
    const good = encodeAbiParameters(input, ['x', 0]);
    expect(await r.dispatch({ jobIndex: 2, input: good }, ctx(2).ctx)).toEqual({
      kind: 'skip',
      reason: 'handler-skipped',
    });
    const unknown = ctx(7);
    expect(await r.dispatch({ jobIndex: 7, input: '0x' }, unknown.ctx)).toEqual({
      kind: 'skip',
      reason: 'unknown-job',
    });
    expect(unknown.lines()[0]).toMatchObject({ level: 40, callId: '9', known: [0, 1, 2, 3] });
    const bad = ctx(1);
    const out = await r.dispatch({ jobIndex: 1, input: '0x1234' }, bad.ctx);
    expect(out).toMatchObject({ kind: 'skip', reason: 'bad-input' });
    expect(bad.lines()[0]).toMatchObject({ level: 50, callId: '9' });
    expect(JSON.stringify(bad.lines()[0])).toContain('job 1 (greet)');
    expect(await r.dispatch({ jobIndex: 3, input: good }, ctx(3).ctx)).toMatchObject({
      reason: 'handler-error',
    });
  });

  it('refuses duplicate and out-of-range job indexes', () => {
    expect(() =>
      router()
        .route(0, () => '0x')
        .route(0, () => '0x'),
    ).toThrow(/already has a handler/);
    try {
      router().route(256, () => '0x');
    } catch (e) {
      expect(isSdkError(e, 'ROUTER')).toBe(true);
    }
  });
});
