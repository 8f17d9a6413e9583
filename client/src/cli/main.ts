// Entry point of the `agent-sandbox` CLI: parses argv, runs one command, prints one clear line
// on failure and returns an exit code from the documented table (see help.ts EXIT_CODES_HELP).
import { ClientError, ExitCode } from '../errors.ts';
import { COMMANDS, type ParsedArgs, parseCli } from './args.ts';
import type { Command } from './commands.ts';
import type { CliIO } from './context.ts';
import { commandHelp, globalHelp } from './help.ts';

// Each command's code (viem, the operator client, TEE verification) loads only when it runs, so
// `--help` and usage errors start in the time of a bare node process.
const ops = () => import('./commands.ts');
const handlers: Record<string, () => Promise<Command>> = {
  login: async () => (await ops()).login,
  logout: async () => (await ops()).logout,
  create: async () => (await import('./jobs.ts')).create,
  branch: async () => (await import('./jobs.ts')).branch,
  list: async () => (await ops()).list,
  get: async () => (await ops()).get,
  exec: async () => (await ops()).exec,
  prompt: async () => (await import('./prompt.ts')).prompt,
  terminal: async () => (await import('./terminal.ts')).terminal,
  files: async () => (await import('./files.ts')).files,
  secrets: async () => (await ops()).secrets,
  members: async () => (await import('./team.ts')).members,
  preview: async () => (await import('./team.ts')).preview,
  ssh: async () => (await import('./ssh.ts')).ssh,
  stop: async () => (await ops()).stop,
  resume: async () => (await ops()).resume,
  snapshot: async () => (await ops()).snapshot,
  shapes: async () => (await ops()).shapes,
  delete: async () => (await import('./jobs.ts')).deleteSandbox,
  tee: async () => (await import('./tee.ts')).teeVerify,
  workflow: async () => (await import('./workflow.ts')).workflow,
  service: async () => (await import('./service.ts')).service,
};

function report(e: unknown, io: CliIO, json: boolean): number {
  const err =
    e instanceof ClientError
      ? e
      : io.signal.aborted
        ? new ClientError('INTERRUPTED', 'interrupted')
        : new ClientError('INTERNAL', `unexpected error: ${(e as Error)?.message ?? String(e)}`, {
            exitCode: ExitCode.REMOTE,
          });
  if (json) {
    io.stderr.write(`${JSON.stringify({ error: err.toJSON() })}\n`);
  } else {
    const tags = [`code ${err.code}`, err.requestId ? `request_id ${err.requestId}` : undefined].filter(
      Boolean,
    );
    // One line: the message says what to do; code and request id help a support conversation.
    io.stderr.write(`agent-sandbox: ${err.message.replace(/\s*\n\s*/g, ' ')} (${tags.join(', ')})\n`);
  }
  return err.exitCode;
}

/** Runs the CLI with explicit IO (tests call this directly); never calls process.exit. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseCli(argv, io.env);
  } catch (e) {
    return report(e, io, argv.includes('--json'));
  }
  if (args.command === 'help') {
    const topic = args.positionals[0];
    if (topic && !COMMANDS[topic])
      return report(new ClientError('USAGE', `no command "${topic}"`), io, false);
    io.stdout.write(`${topic ? commandHelp(topic) : globalHelp()}\n`);
    return ExitCode.OK;
  }
  if (args.help) {
    io.stdout.write(`${args.command ? commandHelp(args.command) : globalHelp()}\n`);
    return ExitCode.OK;
  }
  if (!args.command) {
    io.stderr.write(`${globalHelp()}\n`);
    return ExitCode.USAGE;
  }
  let json = args.globals.json === true;
  let out = io;
  try {
    const [{ CliContext }, handler] = await Promise.all([import('./context.ts'), handlers[args.command]!()]);
    const ctx = new CliContext(args, io);
    json = ctx.json;
    // An error's message can carry the sandbox's text (a failed run's): through the same filter.
    out = ctx.io;
    return await handler(ctx);
  } catch (e) {
    return report(e, out, json);
  }
}

/** Reads a password from the terminal without echoing it. */
function readSecretFromTty(prompt: string): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    process.stderr.write(prompt);
    let value = '';
    stdin.setRawMode(true);
    stdin.resume();
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new ClientError('INTERRUPTED', 'password prompt cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The process entry: real stdio, Ctrl-C → abort (a second Ctrl-C exits at once). */
export async function runCli(argv: string[] = process.argv.slice(2)): Promise<never> {
  const ac = new AbortController();
  const onSigint = () => {
    if (ac.signal.aborted) process.exit(ExitCode.INTERRUPTED);
    ac.abort();
  };
  process.on('SIGINT', onSigint);
  const io: CliIO = {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    signal: ac.signal,
    ...(process.stdin.isTTY ? { readSecret: readSecretFromTty } : {}),
  };
  let code = await main(argv, io);
  if (ac.signal.aborted && code !== ExitCode.OK) code = ExitCode.INTERRUPTED;
  process.off('SIGINT', onSigint);
  // Let stdout drain before leaving (piped output must not be cut short).
  await new Promise<void>((r) => process.stdout.write('', () => r()));
  process.exit(code);
}
