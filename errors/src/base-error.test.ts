// The error base on its own: code, short message, details, cause, and walk() down the cause chain.
import { describe, expect, it } from 'vitest';
import { BaseError, isBaseError, walkCauses } from './base-error.ts';

class ToyError extends BaseError<'A' | 'B'> {
  override readonly name = 'ToyError';
}

describe('BaseError', () => {
  it('carries code, short message, details and cause', () => {
    const cause = new Error('below');
    const e = new ToyError('A', 'do this', { cause, details: { n: 1 } });
    expect([e.code, e.message, e.shortMessage, e.details, e.cause]).toEqual([
      'A',
      'do this',
      'do this',
      { n: 1 },
      cause,
    ]);
    expect(isBaseError(e, 'A')).toBe(true);
    expect(isBaseError(e, 'B')).toBe(false);
    expect(new ToyError('B', 'x').cause).toBeUndefined();
  });

  it('walk() finds the first match or the deepest cause, and stops on a cycle', () => {
    const inner = new ToyError('B', 'inner');
    const outer = new ToyError('A', 'outer', { cause: new Error('lib', { cause: inner }) });
    expect(outer.walk((x) => isBaseError(x, 'B'))).toBe(inner);
    expect(outer.walk((x) => x === 'nothing')).toBeUndefined();
    expect(outer.walk()).toBe(inner);
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = new Error('b', { cause: a });
    expect(walkCauses(a)).toBe(a.cause);
  });
});
