// The lifecycle state machine, server-side ids/tokens, and the public view of a record.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRuntimeError } from '../errors.ts';
import {
  assertTransition,
  canTransition,
  newSandboxId,
  newSidecarToken,
  publicView,
  SANDBOX_STATES,
  type SandboxRecord,
} from './record.ts';

describe('sandbox state machine', () => {
  it('allows the lifecycle moves and refuses the rest with CONFLICT', () => {
    expect(canTransition('pending', 'provisioning')).toBe(true);
    expect(canTransition('provisioning', 'running')).toBe(true);
    expect(canTransition('running', 'stopped')).toBe(true);
    expect(canTransition('stopped', 'running')).toBe(true);
    expect(canTransition('stopped', 'expired')).toBe(true);
    for (const s of SANDBOX_STATES) expect(canTransition(s, 'deleted')).toBe(true);
    expect(canTransition('deleted', 'running')).toBe(false);
    expect(canTransition('expired', 'running')).toBe(false);
    expect(canTransition('failed', 'running')).toBe(false);
    expect(canTransition('pending', 'running')).toBe(false);
    const err = (() => {
      try {
        assertTransition('sbx-x', 'deleted', 'running');
      } catch (e) {
        return e;
      }
    })();
    expect(isRuntimeError(err, 'CONFLICT')).toBe(true);
    expect((err as Error).message).toBe('sandbox sbx-x is deleted and cannot become running');
  });

  it('never leaves a terminal state except to deleted', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SANDBOX_STATES), (to) => {
        expect(canTransition('deleted', to)).toBe(to === 'deleted');
        expect(canTransition('expired', to)).toBe(to === 'deleted' || to === 'expired');
      }),
    );
  });

  it('generates unique ids and 32-byte hex tokens', () => {
    const ids = new Set(Array.from({ length: 1000 }, newSandboxId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^sbx-[0-9a-f]{32}$/);
    expect(newSidecarToken()).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the public view carries neither the token nor env values', () => {
    const rec = {
      id: newSandboxId(),
      token: newSidecarToken(),
      userEnv: { OPENAI_API_KEY: 'sk-secret' },
      baseEnv: { MODE: 'x' },
      owner: '0xabc',
    } as unknown as SandboxRecord;
    const v = publicView(rec);
    expect(JSON.stringify(v)).not.toContain(rec.token);
    expect(JSON.stringify(v)).not.toContain('sk-secret');
    expect(v.userEnvKeys).toEqual(['OPENAI_API_KEY']);
  });
});
