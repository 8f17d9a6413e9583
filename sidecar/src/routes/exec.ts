// POST /terminals/commands: one command through `bash -lc` as the agent user, bounded and timed out.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { SidecarConfig } from '../config.ts';
import { SidecarError } from '../errors.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity, runProcess } from '../exec/run-process.ts';
import { type Handler, ok, parseBody } from '../http/http-router.ts';
import { timeoutFields, timeoutMsOf } from '../http/timeout-ms.ts';
import * as z from '../schema.ts';
import { refusePlatformOwned } from './user-env.ts';

const ExecBody = z.object({
  command: z.string(),
  cwd: z.optional(z.string().check(z.minLength(1))),
  env: z.optional(z.record(z.string(), z.string())),
  ...timeoutFields,
});

/** Resolves `cwd` against the workspace and checks it is a directory the command can start in. */
export async function resolveCwd(config: SidecarConfig, cwd: string | undefined): Promise<string> {
  const dir = resolve(config.workspaceRoot, cwd ?? '.');
  const st = await stat(dir).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new SidecarError('INVALID_CWD', `cwd '${cwd}' is not an existing directory`, 400);
  }
  return dir;
}

export function execHandler(config: SidecarConfig): Handler {
  return async (ctx) => {
    const raw = await ctx.body();
    const command = (raw as { command?: unknown } | null)?.command;
    if (typeof command !== 'string' || command.trim() === '') {
      throw new SidecarError(
        'INVALID_COMMAND',
        'command is required: a non-empty string run with bash -lc',
        400,
      );
    }
    const body = parseBody(ExecBody, raw);
    refusePlatformOwned(body.env);
    const cwd = await resolveCwd(config, body.cwd);
    const r = await runProcess({
      argv: ['/bin/bash', '-lc', body.command],
      cwd,
      env: childEnv(config, body.env),
      ...identity(config.uid, config.gid),
      timeoutMs: timeoutMsOf(body) ?? config.execTimeoutMs,
      outputLimitBytes: config.outputLimitBytes,
    });
    ctx.log.info({ exitCode: r.exitCode, ms: r.durationMs, timedOut: r.timedOut }, 'exec finished');
    const result = { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, duration: r.durationMs };
    return ok({ success: true, result, ...result });
  };
}
