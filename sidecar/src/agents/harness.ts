// Which coding-agent CLI a run uses and how it is invoked (codex, claude, opencode, gemini, or SIDECAR_AGENT_COMMAND).
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { HARNESSES, type HarnessName } from '@agent-sandbox/platform-names';
import { SidecarError } from '../errors.ts';

export { HARNESSES, type HarnessName };

export interface AgentDescriptor {
  identifier: string;
  displayName: string;
  description: string;
}

export const AGENTS: AgentDescriptor[] = [
  {
    identifier: 'default',
    displayName: 'Default agent',
    description: 'Chosen by SIDECAR_DEFAULT_HARNESS or by which API key is set',
  },
  { identifier: 'codex', displayName: 'Codex', description: 'OpenAI Codex CLI (codex exec)' },
  { identifier: 'claude', displayName: 'Claude Code', description: 'Anthropic Claude Code CLI (claude -p)' },
  { identifier: 'opencode', displayName: 'OpenCode', description: 'OpenCode CLI (opencode run)' },
  { identifier: 'gemini', displayName: 'Gemini CLI', description: 'Google Gemini CLI (gemini -p)' },
];

const isHarness = (s: string | undefined): s is HarnessName =>
  !!s && (HARNESSES as readonly string[]).includes(s);

/**
 * `identifier` first, then `backend.type`; for `default`: SIDECAR_DEFAULT_HARNESS, then the first
 * API key present (OpenAI → codex, Anthropic → claude, Gemini → gemini), else opencode.
 */
export function chooseHarness(
  identifier: string | undefined,
  backendType: string | undefined,
  env: Record<string, string | undefined>,
  defaultHarness: string | undefined,
): HarnessName {
  const asked =
    identifier && identifier !== 'default'
      ? identifier
      : backendType && backendType !== 'default'
        ? backendType
        : undefined;
  if (asked !== undefined) {
    if (isHarness(asked)) return asked;
    throw new SidecarError(
      'INVALID_REQUEST',
      `unknown agent '${asked}'; use one of default, ${HARNESSES.join(', ')} (or set SIDECAR_AGENT_COMMAND)`,
      400,
    );
  }
  if (isHarness(defaultHarness)) return defaultHarness;
  if (env['OPENAI_API_KEY']) return 'codex';
  if (env['ANTHROPIC_API_KEY']) return 'claude';
  if (env['GEMINI_API_KEY']) return 'gemini';
  return 'opencode';
}

/** What a harness honours of a `task`'s options (the rest are ignored, and the capability documents say so). */
export const HARNESS_SUPPORTS: Record<
  HarnessName,
  { systemPrompt: boolean; maxTurns: boolean; sessions: boolean }
> = {
  codex: { systemPrompt: true, maxTurns: false, sessions: true },
  claude: { systemPrompt: true, maxTurns: true, sessions: true },
  opencode: { systemPrompt: false, maxTurns: false, sessions: true },
  gemini: { systemPrompt: false, maxTurns: false, sessions: true },
};

export interface HarnessOptions {
  model?: string;
  /** The harness's own id of the conversation to continue (learnt from its previous run). */
  resumeId?: string;
  systemPrompt?: string;
  maxTurns?: number;
  /** The env the harness will run with (for provider base URLs). */
  env?: Record<string, string | undefined>;
}

/** The provider name codex and opencode get for a base URL set in the user's env. */
export const SANDBOX_PROVIDER = 'agent-sandbox';

const toml = (v: string) => JSON.stringify(v);

/**
 * The argv of one harness run, with its machine-readable output (one JSON event a line) on stdout.
 * Only the prompt and the user's own options reach the argv; credentials stay in the env.
 */
export function harnessArgv(harness: HarnessName, message: string, opts: HarnessOptions = {}): string[] {
  const { model, resumeId, systemPrompt, maxTurns } = opts;
  const env = opts.env ?? {};
  switch (harness) {
    case 'codex': {
      const base = env['OPENAI_BASE_URL'];
      const provider = base
        ? [
            ['model_provider', toml(SANDBOX_PROVIDER)],
            [`model_providers.${SANDBOX_PROVIDER}.name`, toml(SANDBOX_PROVIDER)],
            [`model_providers.${SANDBOX_PROVIDER}.base_url`, toml(base)],
            [`model_providers.${SANDBOX_PROVIDER}.env_key`, toml('OPENAI_API_KEY')],
            [`model_providers.${SANDBOX_PROVIDER}.wire_api`, toml('responses')],
          ]
        : [];
      if (systemPrompt) provider.push(['developer_instructions', toml(systemPrompt)]);
      return [
        'codex',
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
        // Shell snapshots save the login shell's env (the user's keys with it) under ~/.codex.
        '-c',
        'features.shell_snapshot=false',
        ...provider.flatMap(([k, v]) => ['-c', `${k}=${v}`]),
        ...(model ? ['-m', model] : []),
        ...(resumeId ? ['resume', resumeId] : []),
        '--',
        message,
      ];
    }
    case 'claude':
      return [
        'claude',
        '-p',
        '--output-format',
        'stream-json',
        '--verbose',
        '--dangerously-skip-permissions',
        ...(model ? ['--model', model] : []),
        ...(resumeId ? ['--resume', resumeId] : []),
        ...(systemPrompt ? ['--append-system-prompt', systemPrompt] : []),
        ...(maxTurns ? ['--max-turns', String(maxTurns)] : []),
        '--',
        message,
      ];
    case 'opencode': {
      const m =
        model && env['OPENAI_BASE_URL'] && !model.includes('/') ? `${SANDBOX_PROVIDER}/${model}` : model;
      return [
        'opencode',
        'run',
        '--format',
        'json',
        ...(m ? ['-m', m] : []),
        ...(resumeId ? ['--session', resumeId] : []),
        '--',
        message,
      ];
    }
    case 'gemini':
      return [
        'gemini',
        '--yolo',
        '--skip-trust',
        '--output-format',
        'stream-json',
        ...(model ? ['-m', model] : []),
        ...(resumeId ? ['--resume', resumeId] : []),
        '-p',
        message,
      ];
  }
}

/** Env a harness needs to run headless in a sandbox: no updaters, no telemetry, the user's base URL wired in. */
export function harnessEnv(
  harness: HarnessName,
  env: Record<string, string | undefined>,
  model: string | undefined,
): Record<string, string> {
  const quiet: Record<string, string> = {};
  if (harness === 'claude') {
    quiet['DISABLE_AUTOUPDATER'] = '1';
    quiet['CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC'] = '1';
  }
  if (harness === 'opencode') {
    quiet['OPENCODE_DISABLE_AUTOUPDATE'] = '1';
    const base = env['OPENAI_BASE_URL'];
    if (base && !env['OPENCODE_CONFIG_CONTENT']) {
      // An OpenAI-compatible provider at the user's base URL; its key is read from the env by name.
      const id = model && !model.includes('/') ? model : 'default';
      quiet['OPENCODE_DISABLE_MODELS_FETCH'] = '1';
      quiet['OPENCODE_CONFIG_CONTENT'] = JSON.stringify({
        provider: {
          [SANDBOX_PROVIDER]: {
            npm: '@ai-sdk/openai-compatible',
            name: SANDBOX_PROVIDER,
            options: { baseURL: base, apiKey: '{env:OPENAI_API_KEY}' },
            models: { [id]: { name: id } },
          },
        },
        model: `${SANDBOX_PROVIDER}/${id}`,
      });
    }
  }
  // The user's own settings win over these defaults.
  for (const k of Object.keys(quiet)) if (env[k] !== undefined) delete quiet[k];
  return quiet;
}

/** The env variables (any one suffices) a harness needs for its model provider. */
export const HARNESS_CREDENTIALS: Record<HarnessName, string[]> = {
  codex: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
  claude: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN'],
  opencode: [
    'OPENAI_API_KEY',
    'ANTHROPIC_API_KEY',
    'GEMINI_API_KEY',
    'OPENROUTER_API_KEY',
    'OPENCODE_CONFIG_CONTENT',
  ],
  gemini: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
};

/** A run without any of the harness's credentials fails at once, naming what to set (never a hang on a login prompt). */
export function assertCredentials(harness: HarnessName, env: Record<string, string | undefined>): void {
  const names = HARNESS_CREDENTIALS[harness];
  if (names.some((n) => env[n])) return;
  throw new SidecarError(
    'AGENT_CREDENTIALS_MISSING',
    `agent harness '${harness}' needs ${names[0]} (or ${names.slice(1).join(', ')}); ` +
      `set it with \`secrets set ${names[0]}=...\` and run again`,
    400,
  );
}

/** Finds `bin` on the PATH the child will see; the run fails naming the harness when it is missing. */
export function assertInstalled(harness: HarnessName, bin: string, path: string | undefined): void {
  for (const dir of (path ?? '').split(':').filter(Boolean)) {
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return;
    } catch {}
  }
  throw new SidecarError(
    'AGENT_EXECUTION_FAILED',
    `agent harness '${harness}' is not installed: no '${bin}' executable on PATH in this sandbox; ` +
      'use an image built with --with-harnesses, choose another agent, or set SIDECAR_AGENT_COMMAND',
    500,
  );
}
