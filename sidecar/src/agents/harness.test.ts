// Harness choice (identifier, backend.type, default rules) and each harness's argv.
import { describe, expect, it } from 'vitest';
import { assertCredentials, chooseHarness, HARNESS_SUPPORTS, harnessArgv, harnessEnv } from './harness.ts';
import { CUMULATIVE_USAGE, usageSince } from './harness-events.ts';

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
  it('asks every harness for its machine-readable event stream, the prompt last after --', () => {
    expect(harnessArgv('codex', 'hi')).toEqual([
      'codex',
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '-c',
      'features.shell_snapshot=false',
      '--',
      'hi',
    ]);
    expect(harnessArgv('claude', 'hi')).toEqual([
      'claude',
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--dangerously-skip-permissions',
      '--',
      'hi',
    ]);
    expect(harnessArgv('opencode', 'hi')).toEqual(['opencode', 'run', '--format', 'json', '--', 'hi']);
    expect(harnessArgv('gemini', '-hi', { model: 'g-2' })).toEqual([
      'gemini',
      '--yolo',
      '--skip-trust',
      '--output-format',
      'stream-json',
      '-m',
      'g-2',
      '-p',
      '-hi',
    ]);
  });

  it("continues the harness's own conversation by the id it reported", () => {
    expect(harnessArgv('codex', 'hi', { resumeId: 't1' }).slice(-4)).toEqual(['resume', 't1', '--', 'hi']);
    expect(harnessArgv('claude', 'hi', { resumeId: 's1' })).toEqual(
      expect.arrayContaining(['--resume', 's1']),
    );
    expect(harnessArgv('opencode', 'hi', { resumeId: 'ses_1' })).toEqual(
      expect.arrayContaining(['--session', 'ses_1']),
    );
    expect(harnessArgv('gemini', 'hi', { resumeId: 'u1' })).toEqual(
      expect.arrayContaining(['--resume', 'u1']),
    );
  });

  it('passes system prompt and max turns where the harness supports them', () => {
    const claude = harnessArgv('claude', 'hi', { systemPrompt: 'be terse', maxTurns: 3 });
    expect(claude).toEqual(
      expect.arrayContaining(['--append-system-prompt', 'be terse', '--max-turns', '3']),
    );
    expect(harnessArgv('codex', 'hi', { systemPrompt: 'be terse' })).toContain(
      'developer_instructions="be terse"',
    );
    expect(HARNESS_SUPPORTS.opencode.maxTurns).toBe(false);
  });

  it("wires a base URL from the user's env into codex's provider config and opencode's", () => {
    const env = { OPENAI_BASE_URL: 'http://10.0.0.1:9/v1', OPENAI_API_KEY: 'sk-secret' };
    const codex = harnessArgv('codex', 'hi', { env, model: 'm' });
    expect(codex).toContain('model_providers.agent-sandbox.base_url="http://10.0.0.1:9/v1"');
    expect(codex).toContain('model_providers.agent-sandbox.env_key="OPENAI_API_KEY"');
    expect(codex.join(' ')).not.toContain('sk-secret');
    const oc = harnessEnv('opencode', env, 'm');
    expect(JSON.parse(oc['OPENCODE_CONFIG_CONTENT']!).provider['agent-sandbox'].options).toEqual({
      baseURL: 'http://10.0.0.1:9/v1',
      apiKey: '{env:OPENAI_API_KEY}',
    });
    expect(harnessArgv('opencode', 'hi', { env, model: 'm' })).toEqual(
      expect.arrayContaining(['-m', 'agent-sandbox/m']),
    );
  });
});

describe('assertCredentials', () => {
  it('names the variable to set when a harness has no credentials', () => {
    expect(() => assertCredentials('claude', {})).toThrow(/ANTHROPIC_API_KEY.*secrets set/);
    expect(() => assertCredentials('gemini', { GEMINI_API_KEY: 'k' })).not.toThrow();
  });
});

describe('usageSince (a harness reporting running totals: what this run cost)', () => {
  it('subtracts the total before the run, field by field, never below zero', () => {
    const before = { inputTokens: 2411, outputTokens: 113, cachedInputTokens: 192 };
    const after = { inputTokens: 3822, outputTokens: 186, cachedInputTokens: 384 };
    expect(usageSince(after, before)).toEqual({
      inputTokens: 1411,
      outputTokens: 73,
      cachedInputTokens: 192,
    });
    // A total that went down (another thread, an edited session file) counts nothing, not negative.
    expect(usageSince(before, after)).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(CUMULATIVE_USAGE.has('codex')).toBe(true);
  });
});
