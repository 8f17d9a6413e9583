// The error base across layers: every package's error is one of ours by class and code, and walk() finds a cause.
import { AttestationError } from '@agent-sandbox/attestation';
import { BlueprintError } from '@agent-sandbox/blueprint-lib';
import { ClientError } from '@agent-sandbox/client';
import { DevnetError } from '@agent-sandbox/devnet';
import { BaseError, isBaseError, walkCauses } from '@agent-sandbox/errors';
import { RuntimeError } from '@agent-sandbox/runtime';
import { SdkError } from '@agent-sandbox/sdk';
import { SidecarError } from '@agent-sandbox/sidecar';
import { describe, expect, it } from 'vitest';

describe('BaseError', () => {
  it('is the base of each layer’s error, with code, short message, details and cause', () => {
    const cause = new Error('engine said no');
    const errors = [
      new SdkError('RPC', 'rpc failed; retry', { cause, details: { url: 'x' } }),
      new RuntimeError('DOCKER_ERROR', 'docker failed', { cause, details: { url: 'x' } }),
      new BlueprintError('CHAIN', 'chain read failed', { cause, details: { url: 'x' } }),
      new ClientError('NETWORK', 'operator unreachable', { cause, details: { url: 'x' } }),
      new AttestationError('SIGNATURE', 'bad signature', { cause }),
      new DevnetError('ANVIL_MISSING', 'anvil missing', { cause }),
      new SidecarError('SPAWN_FAILED', 'could not start the command', 500, { cause }),
    ];
    for (const e of errors) {
      expect(e).toBeInstanceOf(BaseError);
      expect(e).toBeInstanceOf(Error);
      expect(isBaseError(e)).toBe(true);
      expect(isBaseError(e, e.code)).toBe(true);
      expect(isBaseError(e, 'NO_SUCH_CODE')).toBe(false);
      expect(e.shortMessage).toBe(e.message);
      expect(e.cause).toBe(cause);
      expect(e.walk()).toBe(cause);
    }
    expect(errors[0]?.details).toEqual({ url: 'x' });
    expect((errors[1] as RuntimeError).status).toBe(502);
    expect((errors[3] as ClientError).exitCode).toBeTypeOf('number');
  });

  it('walk(fn) finds the first matching error down the chain and stops on a cycle', () => {
    const inner = new RuntimeError('CAPACITY_EXHAUSTED', 'full');
    const outer = new BlueprintError('RUNTIME', 'runtime failed', {
      cause: new Error('lib', { cause: inner }),
    });
    expect(outer.walk((e) => e instanceof RuntimeError)).toBe(inner);
    expect(outer.walk((e) => e instanceof SdkError)).toBeUndefined();
    expect(outer.walk()).toBe(inner);
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(walkCauses(a)).toBe(b);
    expect(walkCauses('not an error')).toBe('not an error');
  });

  it('a plain Error with our name and a code is not ours', () => {
    const e = Object.assign(new Error('x'), { name: 'RuntimeError', code: 'DOCKER_ERROR' });
    expect(isBaseError(e)).toBe(false);
  });
});
