// The demo's walk through one sandbox's life with the real `agent-sandbox` CLI: create (job 0) →
// login → exec → prompt (our own agent program) → secrets → delete (job 1), printing each command.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Docker from 'dockerode';
import { ROOT, STATE_FILE } from './stack.ts';

// The bundle the published `agent-sandbox` bin runs (scripts/demo.sh builds it).
const CLI = join(ROOT, 'client', 'dist', 'cli.mjs');
const AGENT_FILE = join(ROOT, 'scripts', 'demo', 'agent.sh');

const c = process.stdout.isTTY
  ? { bold: '\x1b[1m', dim: '\x1b[2m', cyan: '\x1b[36m', green: '\x1b[32m', reset: '\x1b[0m' }
  : { bold: '', dim: '', cyan: '', green: '', reset: '' };

export const say = (s = '') => process.stdout.write(`${s}\n`);
export const header = (s: string) =>
  say(`\n${c.bold}${c.cyan}━━ ${s} ${'━'.repeat(Math.max(3, 72 - s.length))}${c.reset}`);
const explain = (s: string) => say(`${c.dim}${s}${c.reset}`);

/** Single-quotes for a shell when needed, so every printed command can be pasted as is. */
export function shq(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `agent-sandbox ARGS`, echoing its output live. `shown` is how the command is printed when
 * an argument is better written another way (e.g. "$(cat scripts/demo/agent.sh)").
 */
export function cli(
  args: string[],
  opts: { shown?: string; env?: Record<string, string>; quietStdout?: boolean } = {},
): Promise<CliRun> {
  const envPrefix = Object.keys(opts.env ?? {})
    .map((k) => `${k}=… `)
    .join('');
  say(`${c.green}$ ${envPrefix}${opts.shown ?? `npx agent-sandbox ${args.map(shq).join(' ')}`}${c.reset}`);
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!opts.quietStdout) process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      process.stdout.write(`${c.dim}${d.toString()}${c.reset}`);
    });
    child.on('error', rej);
    const started = Date.now();
    child.on('exit', (code, signal) => {
      const took = ((Date.now() - started) / 1000).toFixed(1);
      say(`${c.dim}[exit ${code ?? signal}, ${took} s]${c.reset}`);
      res({ code: code ?? (signal ? 130 : 1), stdout, stderr });
    });
  });
}

export async function must(run: Promise<CliRun>, what: string, okCodes = [0]): Promise<CliRun> {
  const r = await run;
  if (!okCodes.includes(r.code)) throw new Error(`${what} failed (exit ${r.code}); see its output above`);
  return r;
}

/** Walks one sandbox through its life; throws naming the step that failed. */
export async function walkthrough(): Promise<void> {
  const devnetRel = relative(ROOT, STATE_FILE);
  // Every command below reads the chain, the cloud service and the `user` key from this file.
  process.env.AGENT_SANDBOX_DEVNET = STATE_FILE;
  const agentProgram = readFileSync(AGENT_FILE, 'utf8');

  header('1/7  create a sandbox (job 0 on chain)');
  explain('The CLI submits job 0 from the devnet `user` account; the blueprint assigns one of the two');
  explain('operators, which provisions a hardened container and posts the sandbox id on chain.');
  explain('Our agent program (scripts/demo/agent.sh) goes in as SANDBOX_AGENT_COMMAND: job inputs are');
  explain('public, so only non-secret env belongs here.');
  say(`${c.green}$ export AGENT_SANDBOX_DEVNET=${devnetRel}${c.reset}`);
  const created = await must(
    cli(
      [
        'create',
        '--json',
        '--name',
        'demo',
        '--env',
        'GREETING=hello',
        '--env',
        `SANDBOX_AGENT_COMMAND=${agentProgram}`,
      ],
      {
        shown:
          'npx agent-sandbox create --json --name demo --env GREETING=hello \\\n    --env SANDBOX_AGENT_COMMAND="$(cat scripts/demo/agent.sh)"',
        quietStdout: true,
      },
    ),
    'create',
  );
  const out = JSON.parse(created.stdout) as {
    sandbox: { id: string; state: string };
    operator: string;
    operator_url: string;
    call_id: string;
  };
  const id = out.sandbox.id;
  const url = out.operator_url;
  say(`(--json output, summarised) sandbox ${c.bold}${id}${c.reset} is ${out.sandbox.state}`);
  say(`on operator ${out.operator} at ${url} (create call ${out.call_id})`);

  header('2/7  sign in to the assigned operator');
  explain("The CLI signs the operator's EIP-191 challenge with the owner key and caches the PASETO");
  explain('session (mode 0600); later commands reuse it. The token is never printed.');
  await must(cli(['login', '--operator', url]), 'login');
  await must(cli(['list', '--operator', url]), 'list');

  header('3/7  run a command in the sandbox');
  await must(
    cli([
      'exec',
      id,
      '--',
      'echo "$GREETING from $(whoami) in $(pwd) on $(uname -sr)"; echo "remember to water the plants" > notes.txt; ls -l',
    ]),
    'exec',
  );

  header('4/7  prompt the agent and stream its run');
  explain('The sidecar runs our agent program for the prompt; the CLI streams its output as it comes.');
  await must(cli(['prompt', id, 'what is in my workspace?']), 'prompt');

  header('5/7  secrets: set one, use it, list names, wipe');
  explain('The value comes from the environment (never from argv or the chain); the operator keeps it');
  explain('encrypted and recreates the container with it. Only names are ever shown.');
  const secret = `demo-${Math.random().toString(36).slice(2, 12)}`;
  await must(
    cli(['secrets', 'set', id, 'DEMO_API_TOKEN'], { env: { DEMO_API_TOKEN: secret } }),
    'secrets set',
  );
  await must(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, expanded inside the sandbox
    cli(['exec', id, '--', 'echo "DEMO_API_TOKEN is set: ${#DEMO_API_TOKEN} characters"; cat notes.txt']),
    'exec with the secret',
  );
  await must(cli(['secrets', 'list', id]), 'secrets list');
  await must(cli(['secrets', 'wipe', id]), 'secrets wipe');
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, expanded inside the sandbox
  await must(cli(['exec', id, '--', 'echo "DEMO_API_TOKEN=${DEMO_API_TOKEN:-<unset>}"']), 'exec after wipe');

  header('6/7  delete the sandbox (job 1 on chain)');
  await must(cli(['delete', id]), 'delete');

  header('7/7  nothing left behind');
  const docker = new Docker();
  const left = await docker.listContainers({ all: true, filters: { label: [`agent-sandbox.id=${id}`] } });
  say(`${c.green}$ docker ps -a --filter label=agent-sandbox.id=${id}${c.reset}`);
  say(left.length === 0 ? '(no containers)' : left.map((x) => `${x.Id.slice(0, 12)} ${x.State}`).join('\n'));
  if (left.length) throw new Error(`containers of ${id} remain after delete`);
}
