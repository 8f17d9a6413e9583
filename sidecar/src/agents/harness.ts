// Which coding-agent CLI a run uses and how it is invoked (codex, claude, opencode, gemini, or SIDECAR_AGENT_COMMAND).
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { SidecarError } from '../errors.ts';

export const HARNESSES = ['codex', 'claude', 'opencode', 'gemini'] as const;
export type HarnessName = (typeof HARNESSES)[number];

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

export interface HarnessInvocation {
  argv: string[];
  label: string;
}

/** The argv of one harness run (plain-text output, which the runner streams line by line). */
export function harnessArgv(
  harness: HarnessName,
  message: string,
  opts: { model?: string; sessionId?: string; resume?: boolean },
): string[] {
  const model = opts.model;
  switch (harness) {
    case 'codex':
      return [
        'codex',
        'exec',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
        ...(model ? ['-m', model] : []),
        message,
      ];
    case 'claude': {
      // Claude accepts a caller-chosen session UUID, so a sessionId continues its own conversation.
      const uuid =
        opts.sessionId &&
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(opts.sessionId);
      const session = uuid
        ? opts.resume
          ? ['--resume', opts.sessionId!]
          : ['--session-id', opts.sessionId!]
        : [];
      return [
        'claude',
        '-p',
        message,
        '--dangerously-skip-permissions',
        ...(model ? ['--model', model] : []),
        ...session,
      ];
    }
    case 'opencode':
      return ['opencode', 'run', ...(model ? ['-m', model] : []), message];
    case 'gemini':
      return ['gemini', '--yolo', ...(model ? ['-m', model] : []), '-p', message];
  }
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
