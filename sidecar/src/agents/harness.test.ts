// Harness choice (identifier, backend.type, default rules) and each harness's argv.
import { describe, expect, it } from 'vitest';
import { chooseHarness, harnessArgv } from './harness.ts';

describe('chooseHarness', () => {
  it('takes identifier first, then backend.type', () => {
    expect(chooseHarness('claude', 'codex', {}, undefined)).toBe('claude');
    expect(chooseHarness('default', 'gemini', {}, undefined)).toBe('gemini');
    expect(chooseHarness(undefined, 'codex', {}, 'claude')).toBe('codex');
  });

  it('for default: SIDECAR_DEFAULT_HARNESS, then the API key present, else opencode', () => {
    expect(chooseHarness('default', undefined, { OPENAI_API_KEY: 'k' }, 'gemini')).toBe('gemini');
    expect(
      chooseHarness('default', undefined, { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' }, undefined),
    ).toBe('codex');
    expect(chooseHarness('default', undefined, { ANTHROPIC_API_KEY: 'k' }, undefined)).toBe('claude');
    expect(chooseHarness('default', undefined, { GEMINI_API_KEY: 'k' }, undefined)).toBe('gemini');
    expect(chooseHarness('default', undefined, {}, undefined)).toBe('opencode');
  });

  it('rejects an unknown agent', () => {
    expect(() => chooseHarness('gpt-pilot', undefined, {}, undefined)).toThrow(/unknown agent 'gpt-pilot'/);
  });
});

describe('harnessArgv', () => {
  it('builds the documented invocations', () => {
    expect(harnessArgv('codex', 'hi', {})).toEqual([
      'codex',
      'exec',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      'hi',
    ]);
    expect(harnessArgv('claude', 'hi', {})).toEqual(['claude', '-p', 'hi', '--dangerously-skip-permissions']);
    expect(harnessArgv('opencode', 'hi', {})).toEqual(['opencode', 'run', 'hi']);
    expect(harnessArgv('gemini', 'hi', { model: 'g-2' })).toEqual([
      'gemini',
      '--yolo',
      '-m',
      'g-2',
      '-p',
      'hi',
    ]);
  });

  it('continues a claude conversation by its session UUID', () => {
    const id = '3f2b8c4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
    expect(harnessArgv('claude', 'hi', { sessionId: id })).toContain('--session-id');
    expect(harnessArgv('claude', 'hi', { sessionId: id, resume: true })).toEqual(
      expect.arrayContaining(['--resume', id]),
    );
    expect(harnessArgv('claude', 'hi', { sessionId: 'not-a-uuid' })).not.toContain('--session-id');
  });
});
