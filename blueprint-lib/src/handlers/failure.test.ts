// What a failure result says on chain: a stable code and our own short text, never the engine's or
// a library's message (they can carry host paths, image internals, or the request's secrets).
import { invalidField, RuntimeError } from '@agent-sandbox/runtime';
import { describe, expect, it } from 'vitest';
import { BlueprintError } from '../errors.ts';
import { describeFailure } from './failure.ts';

const engineText =
  'Error response from daemon: failed to create task for container: mkdir /var/lib/docker/overlay2/3f9c/merged: ' +
  'no space left on device; OPENAI_API_KEY=sk-live-123 in /srv/agent-sandbox/data/secrets';

describe('describeFailure', () => {
  it('never passes a runtime error’s text on: a stable code and our own message', () => {
    for (const code of [
      'DOCKER_ERROR',
      'PROVISION_FAILED',
      'IMAGE_NOT_FOUND',
      'HEALTH_CHECK_TIMEOUT',
      'INTERNAL',
      'ENGINE_UNAVAILABLE',
      'STORE_FULL',
    ] as const) {
      const f = describeFailure(new RuntimeError(code, `provisioning failed: ${engineText}`));
      expect(f.code).toBe(code);
      expect(f.message).not.toMatch(/daemon|\/var\/lib|\/srv|overlay|sk-live|OPENAI/);
      expect(f.message.length).toBeLessThanOrEqual(200);
      expect(f.message.length).toBeGreaterThan(10);
    }
  });

  it('says an engine that does not answer and a full disk as such (issue 29)', () => {
    expect(describeFailure(new RuntimeError('ENGINE_UNAVAILABLE', engineText)).message).toMatch(
      /container engine does not answer: nothing of the sandbox was kept/,
    );
    expect(describeFailure(new RuntimeError('STORE_FULL', engineText)).message).toMatch(/disk is full/);
  });

  it('says a create past the host memory budget as such, with what to do (issue 24)', () => {
    const f = describeFailure(new RuntimeError('MEMORY_BUDGET_EXCEEDED', engineText));
    expect(f.code).toBe('MEMORY_BUDGET_EXCEEDED');
    expect(f.message).toMatch(
      /host memory budget .* ask for less memory_mb, try again later or use another operator/,
    );
    expect(f.message).not.toMatch(/daemon|sk-live/);
  });

  it('says a pull the registry refused as a matter for the operator, not only one of waiting (issue 25)', () => {
    // The registry asked for a login the operator lacks or refused its login: waiting does not help.
    const f = describeFailure(
      new RuntimeError('IMAGE_PULL_FAILED', 'pulling r.example/app:1 failed: no basic auth credentials'),
    );
    expect(f.code).toBe('IMAGE_PULL_FAILED');
    expect(f.message).toMatch(/refused the operator’s login or did not answer.*ask the operator/);
    expect(f.message).not.toMatch(/r\.example|basic auth/);
  });

  it('is the same text for the same code whatever the cause', () => {
    const a = describeFailure(new RuntimeError('DOCKER_ERROR', 'one engine message'));
    const b = describeFailure(new RuntimeError('DOCKER_ERROR', 'another engine message /tmp/x'));
    expect(a).toEqual(b);
  });

  it('keeps our own request errors (written for the user), capped in length', () => {
    const f = describeFailure(new BlueprintError('INVALID_REQUEST', 'name must be 1..64 characters'));
    expect(f).toEqual({ code: 'INVALID_REQUEST', message: 'name must be 1..64 characters' });
    const long = describeFailure(new BlueprintError('INVALID_REQUEST', `x${'y'.repeat(500)}`));
    expect(long.message.length).toBeLessThanOrEqual(200);
  });

  it('publishes a refused field and why (the runtime’s validation is ours), in the job’s field names', () => {
    const f = describeFailure(
      new RuntimeError(
        'VALIDATION',
        'env "SIDECAR_AGENT_COMMAND": SIDECAR_ names are owned by the platform',
        {
          details: { field: 'env.SIDECAR_AGENT_COMMAND', reason: 'SIDECAR_ names are owned by the platform' },
        },
      ),
    );
    expect(f.code).toBe('VALIDATION');
    expect(f.message).toBe('env_json.SIDECAR_AGENT_COMMAND: SIDECAR_ names are owned by the platform');
    expect(describeFailure(invalidField('memoryMb', 'is below the 128 MB a sandbox needs')).message).toBe(
      'memory_mb: is below the 128 MB a sandbox needs',
    );
  });

  it('a VALIDATION that names no field of ours (a sidecar’s or a library’s text) keeps the fixed line', () => {
    const f = describeFailure(
      new RuntimeError('VALIDATION', `sidecar said: ${engineText}`, { details: { sidecar_status: 400 } }),
    );
    expect(f.message).toBe('the runtime refused the request; check its fields against the operator’s limits');
    // A field whose reason is not a string (a library's object) is not published either.
    const odd = describeFailure(
      new RuntimeError('VALIDATION', engineText, { details: { field: 'env', reason: { engineText } } }),
    );
    expect(odd.message).not.toMatch(/daemon|sk-live/);
  });

  it('anything else is INTERNAL with a fixed text', () => {
    for (const e of [new Error(engineText), new TypeError('cannot read x of undefined'), 'boom', undefined]) {
      expect(describeFailure(e)).toEqual({
        code: 'INTERNAL',
        message: 'the operator failed unexpectedly; its logs have the details',
      });
    }
  });

  it('matches by class, never by name: a foreign error dressed as ours keeps its text off chain', () => {
    // A library error that happens to carry our name and a code-shaped field.
    const dressed = Object.assign(new Error(`chain read failed: ${engineText}`), {
      name: 'BlueprintError',
      code: 'INVALID_REQUEST',
    });
    expect(describeFailure(dressed)).toEqual({
      code: 'INTERNAL',
      message: 'the operator failed unexpectedly; its logs have the details',
    });
    const runtimeLike = Object.assign(new Error(engineText), { name: 'RuntimeError', code: 'DOCKER_ERROR' });
    expect(describeFailure(runtimeLike).code).toBe('INTERNAL');
  });
});
