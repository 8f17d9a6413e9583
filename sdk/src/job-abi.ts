// Job inputs and results as ABI bytes: decode a job's input in either accepted encoding (flat or
// single tuple) and encode a handler's result as one tuple.
import {
  type AbiParameter,
  type AbiParameterToPrimitiveType,
  decodeAbiParameters,
  encodeAbiParameters,
  type Hex,
  isHex,
} from 'viem';
import { SdkError } from './errors.ts';

/** A job's parameter (or result) list, e.g. `[{ name: 'name', type: 'string' }, ...] as const`. */
export type JobSchema = readonly AbiParameter[];

/** The value a schema describes: the same as decoding `tuple(schema)` with viem. */
export type JobValue<S extends JobSchema> = AbiParameterToPrimitiveType<{ type: 'tuple'; components: S }>;

export type InputEncoding = 'tuple' | 'flat';

export interface DecodedJobInput<S extends JobSchema> {
  value: JobValue<S>;
  /** Which of the two accepted encodings the bytes were. */
  encoding: InputEncoding;
}

export interface JobArgDecoder<S extends JobSchema> {
  (input: Hex): JobValue<S>;
  /** Same as calling the decoder, but also says which encoding matched. */
  decode(input: Hex): DecodedJobInput<S>;
  readonly schema: S;
}

const tupleOf = (fields: JobSchema): AbiParameter => ({ type: 'tuple', components: fields });

/** A value as the tuple decode returns it: an object when every field is named, else an array. */
function fromFlat(fields: JobSchema, values: readonly unknown[]): unknown {
  if (fields.length === 0 || fields.some((f) => !f.name)) return [...values];
  return Object.fromEntries(fields.map((f, i) => [f.name, values[i]]));
}

function tryTuple(fields: JobSchema, input: Hex): unknown | undefined {
  try {
    const [value] = decodeAbiParameters([tupleOf(fields)], input);
    return encodeAbiParameters([tupleOf(fields)], [value]).toLowerCase() === input.toLowerCase()
      ? value
      : undefined;
  } catch {
    return undefined;
  }
}

function tryFlat(fields: JobSchema, input: Hex): unknown | undefined {
  try {
    const values = decodeAbiParameters(fields, input);
    return encodeAbiParameters(fields, values).toLowerCase() === input.toLowerCase()
      ? fromFlat(fields, values)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Decoder for a job's input. Both encodings the ecosystem produces are accepted:
 * - single tuple, `abi.encode(struct)` (Rust SDK): for a struct with a dynamic field that is
 *   0x20 ‖ the flat encoding; for an all-static struct it is byte-identical to the flat one;
 * - flat, `encodeAbiParameters(fields, values)` (front-ends).
 *
 * Some bytes are valid in both forms (e.g. one `string` field: 0x20‖0x20‖0 is the tuple of "" and
 * also the flat 32-NUL string). The rule, deterministic: the tuple reading wins when the first
 * word is 0x20 and re-encoding the decoded tuple gives back exactly the input; otherwise the flat
 * reading, also only if it re-encodes exactly. Non-canonical bytes (trailing data, dirty padding,
 * out-of-range ints, odd offsets) match neither and throw `SdkError('JOB_INPUT_DECODE')`.
 */
export function jobArg<const S extends JobSchema>(schema: S, opts: { job?: string } = {}): JobArgDecoder<S> {
  const job = opts.job ?? 'job';
  const decode = (input: Hex): DecodedJobInput<S> => {
    if (typeof input !== 'string' || !isHex(input, { strict: true }) || (input.length - 2) % 2 !== 0) {
      throw new SdkError('JOB_INPUT_DECODE', `Input of ${job} is not a 0x-prefixed hex byte string.`);
    }
    const firstWordIs0x20 = input.length >= 66 && BigInt(input.slice(0, 66)) === 32n;
    if (firstWordIs0x20) {
      const value = tryTuple(schema, input);
      if (value !== undefined) return { value: value as JobValue<S>, encoding: 'tuple' };
    }
    const value = tryFlat(schema, input);
    if (value !== undefined) {
      // All-static schemas encode identically both ways; report them as tuple (what abi.encode gives).
      const isStatic = encodeAbiParameters([tupleOf(schema)], [value]).length === input.length;
      return { value: value as JobValue<S>, encoding: isStatic && !firstWordIs0x20 ? 'tuple' : 'flat' };
    }
    const sig = `(${schema.map((f) => f.type).join(',')})`;
    throw new SdkError(
      'JOB_INPUT_DECODE',
      `Input of ${job} (${(input.length - 2) / 2} bytes) is not a canonical ABI encoding of ${sig}, ` +
        'neither flat (encodeAbiParameters(fields, values)) nor as one tuple (abi.encode(struct)); ' +
        'the caller must re-encode it.',
      { details: { job, bytes: (input.length - 2) / 2, signature: sig } },
    );
  };
  const fn = ((input: Hex) => decode(input).value) as JobArgDecoder<S>;
  Object.assign(fn, { decode, schema });
  return fn;
}

/** Encodes a job result as one tuple, `abi.encode(tuple)`, the form this project's outputs use. */
export function jobResult<const S extends JobSchema>(
  schema: S,
  value: JobValue<S>,
  opts: { job?: string } = {},
): Hex {
  try {
    return encodeAbiParameters([tupleOf(schema)], [value as never]);
  } catch (e) {
    throw new SdkError(
      'JOB_RESULT_ENCODE',
      `The result of ${opts.job ?? 'job'} does not fit its result schema: ${(e as Error).message.split('\n')[0]}`,
      { cause: e },
    );
  }
}

/** Decodes a result produced by `jobResult` (for clients and tests). */
export function decodeJobResult<const S extends JobSchema>(schema: S, output: Hex): JobValue<S> {
  try {
    return decodeAbiParameters([tupleOf(schema)], output)[0] as JobValue<S>;
  } catch (e) {
    throw new SdkError('JOB_INPUT_DECODE', `Result bytes do not decode as the result schema.`, { cause: e });
  }
}
