// Test-only: runs the CLI in-process with captured output, a private config dir and an abort
// switch standing in for Ctrl-C.
import { PassThrough } from 'node:stream';
import type { CliIO } from '../cli/context.ts';
import { main } from '../cli/main.ts';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

export function runCliInProcess(
  argv: string[],
  opts: {
    configDir: string;
    env?: Record<string, string>;
    stdin?: PassThrough;
    abortAfterMs?: number;
    /** stdout and stderr say they are a terminal (as process.stdout on a TTY does). */
    tty?: boolean;
    /** Called with all of stdout so far after each write (tests wait on output, not on time). */
    onStdout?: (soFar: string) => void;
  },
): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const ac = new AbortController();
  const io: CliIO = {
    stdout: {
      write: (s: string) => {
        out.push(s);
        opts.onStdout?.(out.join(''));
        return true;
      },
      ...(opts.tty ? { isTTY: true } : {}),
    },
    stderr: { write: (s: string) => err.push(s), ...(opts.tty ? { isTTY: true } : {}) },
    stdin: opts.stdin ?? new PassThrough(),
    env: { AGENT_SANDBOX_CONFIG_DIR: opts.configDir, ...opts.env },
    signal: ac.signal,
  };
  if (opts.abortAfterMs !== undefined) setTimeout(() => ac.abort(), opts.abortAfterMs);
  return main(argv, io).then((code) => ({ code, out: out.join(''), err: err.join('') }));
}
