// Which sandbox is "the instance sandbox of service S": the newest attempt's, unless it failed or
// expired; call ids of other services and cloud creates never count.
import { describe, expect, it } from 'vitest';
import { instanceAttempt, instanceCallId, instanceSandboxOf } from './instance.ts';

const records = (rows: Array<[string, string, string]>) => ({
  list: () => rows.map(([id, callId, state]) => ({ id, callId, state })),
});

describe('instance records', () => {
  it('call ids name the service and the attempt, and parse back', () => {
    expect(instanceCallId(7n)).toBe('instance-7');
    expect(instanceCallId(7n, 3)).toBe('instance-7-3');
    expect(instanceAttempt('instance-7', 7n)).toBe(1);
    expect(instanceAttempt('instance-7-3', 7n)).toBe(3);
    expect(instanceAttempt('instance-70', 7n)).toBeUndefined();
    expect(instanceAttempt('instance-7-x', 7n)).toBeUndefined();
    expect(instanceAttempt('12', 7n)).toBeUndefined();
  });

  it('the newest attempt wins; a failed or expired newest attempt means none', () => {
    expect(
      instanceSandboxOf(
        records([
          ['a', 'instance-7', 'failed'],
          ['b', 'instance-7-2', 'running'],
          ['c', '5', 'running'],
          ['d', 'instance-8', 'running'],
        ]),
        7n,
      ),
    ).toEqual({ id: 'b', state: 'running', attempt: 2 });
    expect(
      instanceSandboxOf(
        records([
          ['a', 'instance-7', 'running'],
          ['b', 'instance-7-2', 'failed'],
        ]),
        7n,
      ),
    ).toBeUndefined();
    expect(instanceSandboxOf(records([['a', 'instance-7', 'expired']]), 7n)).toBeUndefined();
    expect(instanceSandboxOf(records([]), 7n)).toBeUndefined();
  });
});
