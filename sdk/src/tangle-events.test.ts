import { iTangleAbi } from '@agent-sandbox/contracts';
import { encodeAbiParameters, getAbiItem, type Hex, numberToHex, pad, toEventSelector } from 'viem';
import { describe, expect, it } from 'vitest';
import { decodeJobSubmitted, JOB_SUBMITTED_TOPIC } from './tangle-events.ts';

const caller = '0x00000000000000000000000000000000000000AA';
const word = (n: number | bigint) => pad(numberToHex(n), { size: 32 });

describe('JobSubmitted decoding', () => {
  it('has the topic the spec lists', () => {
    expect(JOB_SUBMITTED_TOPIC).toBe('0xde37cc48d21778e1c9a075c4e41c5aff6918c3ea6151221f0af3ce8121a29db5');
    expect(toEventSelector(getAbiItem({ abi: iTangleAbi, name: 'JobSubmitted' }))).toBe(JOB_SUBMITTED_TOPIC);
  });

  const base = {
    address: caller as Hex,
    blockNumber: '0x10' as Hex,
    blockHash: '0x01' as Hex,
    logIndex: '0x2' as Hex,
    transactionHash: '0x02' as Hex,
  };

  it('decodes the real 3-topic layout (jobIndex in the data)', () => {
    const e = decodeJobSubmitted({
      ...base,
      topics: [JOB_SUBMITTED_TOPIC, word(7), word(3)],
      data: encodeAbiParameters(
        [{ type: 'uint8' }, { type: 'address' }, { type: 'bytes' }],
        [5, caller, '0xbeef'],
      ),
    });
    expect(e).toMatchObject({
      serviceId: 7n,
      callId: 3n,
      jobIndex: 5,
      caller,
      inputs: '0xbeef',
      blockNumber: 16n,
      logIndex: 2,
    });
  });

  it('accepts the interface 4-topic layout (jobIndex as a topic)', () => {
    const e = decodeJobSubmitted({
      ...base,
      topics: [JOB_SUBMITTED_TOPIC, word(7), word(3), word(9)],
      data: encodeAbiParameters([{ type: 'address' }, { type: 'bytes' }], [caller, '0x']),
    });
    expect(e).toMatchObject({ serviceId: 7n, callId: 3n, jobIndex: 9, inputs: '0x' });
  });

  it('returns undefined for malformed logs instead of throwing', () => {
    expect(
      decodeJobSubmitted({ ...base, topics: [JOB_SUBMITTED_TOPIC, word(7), word(3)], data: '0x1234' }),
    ).toBeUndefined();
    expect(decodeJobSubmitted({ ...base, topics: [word(1)], data: '0x' })).toBeUndefined();
    expect(
      decodeJobSubmitted({
        ...base,
        blockNumber: null,
        topics: [JOB_SUBMITTED_TOPIC, word(7), word(3)],
        data: '0x',
      }),
    ).toBeUndefined();
  });
});
