// The CLI's help text, generated from the grammar table of args.ts (so `--help` always matches what
// the parser accepts), and the documented exit codes.
import { COMMANDS, GLOBAL_OPTIONS, type OptSpec } from './args.ts';

function optionLines(opts: Record<string, OptSpec>): string[] {
  return Object.entries(opts).map(([k, s]) => {
    const flag = `${s.short ? `-${s.short}, ` : ''}--${k}${s.arg ? ` ${s.arg}` : ''}`;
    return `  ${flag.padEnd(30)} ${s.help}`;
  });
}

export const EXIT_CODES_HELP = `Exit codes:
  0    ok
  1    usage: bad flags or arguments, invalid input
  2    auth: no/expired session, wrong key or password, not the owner
  3    not found: no such sandbox (or run, terminal)
  4    conflict/state: sandbox not running, a run already active, a CVM sandbox without --tee
  5    remote: operator unreachable or failing, provisioning failed
  6    chain: RPC error, reverted transaction, no result on chain
  7    exec only: the command ran and exited non-zero
  8    tee verify / secrets set --sealed / --tee: the attestation did not verify (nothing was sent)
  130  interrupted (Ctrl-C)`;

export function globalHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'agent-sandbox: create and use Tangle agent sandboxes as their owner',
    '',
    'Usage: agent-sandbox <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    EXIT_CODES_HELP,
    '',
    'Sessions: `login` caches a bearer token in ~/.config/agent-sandbox/sessions.json (mode 0600;',
    'AGENT_SANDBOX_CONFIG_DIR overrides the directory). Anyone who reads it can act as you on that',
    'operator until it expires (1 h); `logout` revokes it.',
    '',
    'Run `agent-sandbox <command> --help` for a command’s options.',
  ].join('\n');
}

export function commandHelp(command: string): string {
  const spec = COMMANDS[command];
  if (!spec) return globalHelp();
  const lines = [`agent-sandbox ${command}: ${spec.summary}`, '', `Usage: agent-sandbox ${spec.usage}`];
  if (spec.details) lines.push('', spec.details);
  if (Object.keys(spec.options).length) lines.push('', 'Options:', ...optionLines(spec.options));
  lines.push('', 'Global options:', ...optionLines(GLOBAL_OPTIONS));
  if (spec.examples?.length) lines.push('', 'Examples:', ...spec.examples.map((e) => `  ${e}`));
  lines.push('', EXIT_CODES_HELP);
  return lines.join('\n');
}
