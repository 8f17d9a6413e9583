import fc from 'fast-check';
import { type AbiParameter, encodeAbiParameters, getAddress, type Hex, toHex } from 'viem';
import { describe, expect, it } from 'vitest';
import { isSdkError } from './errors.ts';
import { decodeJobResult, jobArg, jobResult } from './job-abi.ts';

// The field types the blueprint uses, each with an arbitrary producing values as viem decodes them.
const fieldArbs = {
  string: fc.string({ unit: 'binary', maxLength: 70 }),
  bool: fc.boolean(),
  uint8: fc.integer({ min: 0, max: 255 }),
  uint32: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  uint64: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  address: fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => getAddress(toHex(b))),
  bytes: fc.uint8Array({ maxLength: 70 }).map((b) => toHex(b)),
} as const;
type FieldType = keyof typeof fieldArbs;
const types = Object.keys(fieldArbs) as FieldType[];

const schemaAndValue = fc.array(fc.constantFrom(...types), { minLength: 1, maxLength: 6 }).chain((ts) => {
  const schema: AbiParameter[] = ts.map((type, i) => ({ name: `f${i}`, type }));
  return fc
    .tuple(...ts.map((t) => fieldArbs[t] as fc.Arbitrary<unknown>))
    .map((vals) => ({ schema, vals, value: Object.fromEntries(vals.map((v, i) => [`f${i}`, v])) }));
});

const tupleEncode = (schema: AbiParameter[], value: unknown): Hex =>
  encodeAbiParameters([{ type: 'tuple', components: schema }], [value as never]);

describe('jobArg / jobResult', () => {
  it('round-trips the single-tuple encoding of random values of every field type', () => {
    fc.assert(
      fc.property(schemaAndValue, ({ schema, value }) => {
        const decoded = jobArg(schema).decode(tupleEncode(schema, value));
        expect(decoded.value).toEqual(value);
        expect(decoded.encoding).toBe('tuple');
      }),
      { numRuns: 400 },
    );
  });

  it('round-trips the flat encoding; where bytes are also a valid tuple, the tuple reading wins', () => {
    fc.assert(
      fc.property(schemaAndValue, ({ schema, vals, value }) => {
        const flat = encodeAbiParameters(schema, vals as never);
        const decoded = jobArg(schema).decode(flat);
        if (
          decoded.encoding === 'flat' ||
          JSON.stringify(decoded.value, big) === JSON.stringify(value, big)
        ) {
          expect(decoded.value).toEqual(value);
        } else {
          // Only the documented ambiguity: the same bytes are exactly the tuple encoding of what we returned.
          expect(tupleEncode(schema, decoded.value)).toBe(flat);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('decodes both encodings of the same value to the same object, and jobResult is the tuple form', () => {
    const schema = [
      { name: 'name', type: 'string' },
      { name: 'cpu', type: 'uint32' },
      { name: 'owner', type: 'address' },
      { name: 'blob', type: 'bytes' },
    ] as const;
    const value = { name: 'box', cpu: 2, owner: getAddress(`0x${'ab'.repeat(20)}`), blob: '0x0102' as Hex };
    const dec = jobArg(schema, { job: 'create' });
    const flat = encodeAbiParameters(schema, [value.name, value.cpu, value.owner, value.blob]);
    const tuple = jobResult(schema, value);
    expect(tuple).toBe(`0x${'0'.repeat(62)}20${flat.slice(2)}`);
    expect(dec.decode(flat)).toEqual({ value, encoding: 'flat' });
    expect(dec.decode(tuple)).toEqual({ value, encoding: 'tuple' });
    expect(decodeJobResult(schema, tuple)).toEqual(value);
  });

  it('resolves the one-string ambiguity deterministically to the tuple reading', () => {
    const schema = [{ name: 's', type: 'string' }] as const;
    const bytes = encodeAbiParameters([{ type: 'string' }], ['\0'.repeat(32)]);
    expect(bytes).toBe(tupleEncode([...schema], { s: '' }));
    expect(jobArg(schema).decode(bytes)).toEqual({ value: { s: '' }, encoding: 'tuple' });
    // Any other one-string value decodes flat as itself.
    const flatHello = encodeAbiParameters([{ type: 'string' }], ['hello']);
    expect(jobArg(schema).decode(flatHello)).toEqual({ value: { s: 'hello' }, encoding: 'flat' });
  });

  it('returns an array for unnamed fields, in both encodings', () => {
    const schema = [{ type: 'uint64' }, { type: 'string' }] as const;
    const dec = jobArg(schema);
    expect(dec(encodeAbiParameters(schema, [5n, 'x']))).toEqual([5n, 'x']);
    expect(dec(encodeAbiParameters([{ type: 'tuple', components: schema }], [[5n, 'x']]))).toEqual([5n, 'x']);
  });

  it('rejects non-canonical bytes with JOB_INPUT_DECODE naming the job', () => {
    const schema = [
      { name: 'flag', type: 'bool' },
      { name: 'who', type: 'address' },
    ] as const;
    const dec = jobArg(schema, { job: 'job 3 (toggle)' });
    const good = encodeAbiParameters(schema, [true, getAddress(`0x${'11'.repeat(20)}`)]);
    const cases: Hex[] = [
      '0x',
      '0x1234',
      `${good}00`, // odd trailing byte
      `${good}${'00'.repeat(32)}`, // trailing word
      `0x${'0'.repeat(63)}2${good.slice(66)}`, // bool = 2
      `0x${good.slice(2, 66)}${'ff'.repeat(12)}${good.slice(90)}`, // dirty address padding
      'nothex' as Hex,
    ];
    for (const c of cases) {
      let err: unknown;
      try {
        dec(c);
      } catch (e) {
        err = e;
      }
      expect(isSdkError(err, 'JOB_INPUT_DECODE'), c).toBe(true);
      expect((err as Error).message).toContain('job 3 (toggle)');
    }
    expect(() =>
      jobArg([{ name: 'n', type: 'uint8' }])(encodeAbiParameters([{ type: 'uint256' }], [256n])),
    ).toThrow(/canonical/);
  });

  it('never crashes on random bytes or mutated encodings: it decodes or throws SdkError', () => {
    const check = (schema: AbiParameter[], bytes: Hex) => {
      try {
        jobArg(schema).decode(bytes);
      } catch (e) {
        if (!isSdkError(e, 'JOB_INPUT_DECODE')) throw e;
      }
    };
    fc.assert(
      fc.property(schemaAndValue, fc.uint8Array({ maxLength: 400 }), ({ schema }, raw) =>
        check(schema, toHex(raw)),
      ),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(
        schemaAndValue,
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        ({ schema, value }, pos, byte) => {
          const enc = tupleEncode(schema, value);
          const n = (enc.length - 2) / 2;
          const i = pos % n;
          const mutated =
            `0x${enc.slice(2, 2 + 2 * i)}${byte.toString(16).padStart(2, '0')}${enc.slice(4 + 2 * i)}` as Hex;
          check(schema, mutated);
          check(schema, enc.slice(0, 2 + 2 * i) as Hex); // truncated
        },
      ),
      { numRuns: 500 },
    );
  });

  it('jobResult rejects a value that does not fit with JOB_RESULT_ENCODE', () => {
    expect(() => jobResult([{ name: 'n', type: 'uint8' }], { n: 300 }, { job: 'x' })).toThrow(
      expect.objectContaining({ code: 'JOB_RESULT_ENCODE' }),
    );
  });
});

function big(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? `${v}n` : v;
}
