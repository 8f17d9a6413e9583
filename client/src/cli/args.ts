// The CLI's grammar: global flags, each command's own flags and positionals; the help text is
// generated from the same table (help.ts), so `--help` always matches what the parser accepts.
import { parseArgs } from 'node:util';
import { ClientError } from '../errors.ts';
import { BRANCH_COMMAND, CREATE_COMMAND } from './create-args.ts';
import { serviceCommand } from './service-args.ts';
import { SSH_COMMANDS } from './ssh-args.ts';
import { SHARING_COMMANDS } from './team-args.ts';

// Kept light: `--help` loads only this file, help.ts and errors.ts; each command's code loads when it runs.

export type OptSpec = {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  help: string;
  arg?: string;
};

/** Options shared by `tee verify` and `secrets set --sealed` (tee.ts runs them). */
export const TEE_VERIFY_OPTIONS = {
  blueprint: {
    type: 'string',
    arg: 'ADDR',
    help: 'TEE-instance blueprint contract (env AGENT_SANDBOX_TEE_BLUEPRINT)',
  },
  'operator-address': {
    type: 'string',
    arg: 'ADDR',
    help: "the operator's chain address (default: its /api/capabilities)",
  },
  measurement: {
    type: 'string',
    multiple: true,
    arg: 'HEX',
    help: 'an allowed measurement (TDX MRTD, SNP MEASUREMENT, Nitro PCR0); repeatable (env AGENT_SANDBOX_TEE_MEASUREMENTS)',
  },
  'measurements-file': {
    type: 'string',
    arg: 'FILE',
    help: 'allow-list file: JSON [{"mrtd":…,"rtmr3":…}] or hex lines',
  },
  'sev-min-tcb': {
    type: 'string',
    arg: 'BL:TEE:SNP:UCODE',
    help: 'SEV-SNP: the lowest reported TCB you accept, e.g. 3:0:8:115',
  },
  'from-block': {
    type: 'string',
    arg: 'N',
    help: 'search reportProvisioned events from this block (default 0)',
  },
  'test-anchors': {
    type: 'string',
    arg: 'DIR',
    help: 'trust a test SEV PKI (ark.pem, ask.pem) and/or a test Intel root (intel-root.pem); needs AGENT_SANDBOX_TEST_MODE=true',
  },
} as const;

/** `--tee` on exec, files, prompt and terminal: the owner channel into a verified enclave. */
export const TEE_CHANNEL_OPTIONS: Record<string, OptSpec> = {
  tee: {
    type: 'boolean',
    help: 'TEE-instance: verify the enclave first (as `tee verify`), then talk to it end to end over the owner channel (the operator relays only ciphertext)',
  },
  ...TEE_VERIFY_OPTIONS,
};
const TEE_DETAILS =
  " With --tee (TEE-instance services) nothing is sent unless the enclave verifies (exit 8); then the request, its output and any file bodies travel encrypted to the attested key and signed by you inside, so the operator relays bytes it cannot read. Without --tee a TEE sandbox refuses these commands (exit 4): its enclave (a Phala CVM's sidecar, or on TEE_BACKEND=direct the measured operator program) takes them only over the channel, and a relay that refuses the channel is an error, never a fallback.";

export const GLOBAL_OPTIONS: Record<string, OptSpec> = {
  operator: { type: 'string', arg: 'URL', help: 'operator API URL (env AGENT_SANDBOX_OPERATOR)' },
  rpc: { type: 'string', arg: 'URL', help: 'chain JSON-RPC URL (env AGENT_SANDBOX_RPC)' },
  tangle: { type: 'string', arg: 'ADDR', help: 'Tangle contract address (env AGENT_SANDBOX_TANGLE)' },
  service: {
    type: 'string',
    arg: 'ID',
    help: 'service id of the sandbox blueprint (env AGENT_SANDBOX_SERVICE)',
  },
  instance: {
    type: 'string',
    arg: 'SERVICE_ID',
    help: "the instance sandbox of this instance-mode service, in place of <id>; its operator is read from the chain's getOperatorEndpoints (env AGENT_SANDBOX_INSTANCE)",
  },
  blueprint: {
    type: 'string',
    arg: 'ADDR',
    help: 'the blueprint contract (env AGENT_SANDBOX_BLUEPRINT); with --instance the instance-mode one (--devnet: its instance contract)',
  },
  devnet: {
    type: 'string',
    arg: 'FILE',
    help: 'fill rpc/tangle/service/key from a devnet.json (devnet/)',
  },
  account: { type: 'string', arg: 'NAME', help: 'which devnet account signs (default: user)' },
  'private-key': {
    type: 'string',
    arg: 'HEX',
    help: 'owner key, development only (env AGENT_SANDBOX_PRIVATE_KEY)',
  },
  keystore: {
    type: 'string',
    arg: 'FILE',
    help: 'owner key from a V3 keystore; password from env AGENT_SANDBOX_KEYSTORE_PASSWORD or a prompt',
  },
  json: { type: 'boolean', help: 'machine-readable output on stdout (errors as JSON on stderr)' },
  raw: {
    type: 'boolean',
    help: "write the sandbox's output to a terminal as is; by default its control characters and escape sequences (clipboard, title, links, screen) are shown escaped",
  },
  help: { type: 'boolean', short: 'h', help: 'show help for the command' },
};

export interface CommandSpec {
  summary: string;
  usage: string;
  positionals: Array<{ name: string; required: boolean; rest?: boolean }>;
  options: Record<string, OptSpec>;
  details?: string;
  examples?: string[];
}

const id = { name: 'id', required: true };

/** The `<id>` a command gets under --instance: the operator's `/api/sandbox/…` names no id. */
export const INSTANCE_SANDBOX = 'instance';
/** Commands that never address an instance's sandbox (it lives as long as its service). */
const NOT_FOR_INSTANCES: Record<string, string> = {
  create: 'the instance sandbox is provisioned by the operator when the service becomes active',
  delete: 'the instance sandbox is deleted when its service is terminated',
};

export const COMMANDS: Record<string, CommandSpec> = {
  login: {
    summary: 'sign in to an operator with the owner key and cache the session',
    usage: 'login [--show-token]',
    positionals: [],
    options: {
      'show-token': { type: 'boolean', help: 'also print the session token (a bearer credential)' },
    },
    details:
      "Signs the operator's EIP-191 challenge and caches the session token in ~/.config/agent-sandbox/sessions.json (mode 0600), keyed by operator URL and address. Later commands reuse it and sign in again when it expires, if a key is given.",
    examples: ['agent-sandbox login --operator http://127.0.0.1:9090 --keystore ~/.keys/owner.json'],
  },
  logout: {
    summary: 'revoke the cached session on the operator and forget it',
    usage: 'logout',
    positionals: [],
    options: {},
  },
  create: CREATE_COMMAND,
  branch: BRANCH_COMMAND,
  shapes: {
    summary: "the operator's sandbox sizes: presets, the default preset and the ceiling",
    usage: 'shapes',
    positionals: [],
    options: {},
    details:
      'Reads GET /api/shapes (no sign-in). `create --shape NAME` picks a preset; a create naming no size gets the default preset, clamped to the ceiling; numbers above the ceiling are refused (RESOURCES_EXCEED_LIMIT, naming the field and the ceiling).',
    examples: ['agent-sandbox shapes --operator http://127.0.0.1:9090'],
  },
  list: {
    summary: 'list the sandboxes you own or are a member of',
    usage: 'list [--scope personal|team|all]',
    positionals: [],
    options: {
      scope: {
        type: 'string',
        arg: 'SCOPE',
        help: 'personal: yours with no members; team: shared ones (yours with members, or you are one); all (default)',
      },
    },
  },
  get: {
    summary: 'show one sandbox (exact id); exit 3 when it does not exist',
    usage: 'get <id>',
    positionals: [id],
    options: {},
  },
  exec: {
    summary: 'run a command in a running sandbox',
    usage: 'exec <id> [--cwd DIR] [--env K=V]… [--timeout MS] -- <command…>',
    positionals: [id, { name: 'command', required: true, rest: true }],
    options: {
      cwd: { type: 'string', arg: 'DIR', help: 'working directory' },
      env: { type: 'string', multiple: true, arg: 'K=V', help: 'extra env for this command; repeatable' },
      timeout: { type: 'string', arg: 'MS', help: 'command timeout in ms (server default 30000)' },
      ...TEE_CHANNEL_OPTIONS,
    },
    details:
      "The words after -- are joined with spaces and run by the sandbox's shell (like ssh), so quote a command that needs its own quoting as one argument. Prints the command's stdout and stderr. Exits 7 when the command ran but exited non-zero." +
      TEE_DETAILS,
    examples: ["agent-sandbox exec sb-123 -- 'ls -la /home/agent'"],
  },
  prompt: {
    summary: 'send a prompt to the sandbox agent and stream the run (Ctrl-C cancels it)',
    usage: 'prompt <id> [--session ID] [--backend TYPE] [--model M] <message…>',
    positionals: [id, { name: 'message', required: true, rest: true }],
    options: {
      session: { type: 'string', arg: 'ID', help: 'continue this agent session' },
      backend: { type: 'string', arg: 'TYPE', help: 'agent backend (codex, claude, opencode, gemini)' },
      model: { type: 'string', arg: 'MODEL', help: 'model name' },
      timeout: { type: 'string', arg: 'MS', help: 'run timeout in ms' },
      run: { type: 'string', arg: 'RUN_ID', help: 'follow an existing run instead of starting one' },
      'last-event-id': { type: 'string', arg: 'ID', help: 'with --run: resume after this event' },
      ...TEE_CHANNEL_OPTIONS,
    },
    details:
      'With --json, prints one JSON event per line (id, event, data). With --tee the run streams straight from the enclave (no --run/--last-event-id: the operator keeps no record of it).' +
      TEE_DETAILS,
  },
  terminal: {
    summary: 'open an interactive shell in the sandbox (Ctrl-] to leave)',
    usage: 'terminal <id>',
    positionals: [id],
    options: { cwd: { type: 'string', arg: 'DIR', help: 'start directory' }, ...TEE_CHANNEL_OPTIONS },
    details:
      'Raw-mode terminal: keys go to the remote shell (Ctrl-C included); the window size follows yours. Exits when the shell exits or on Ctrl-].' +
      TEE_DETAILS,
  },
  files: {
    summary: "the sandbox's workspace files: ls [DIR] | get PATH [LOCAL] | put LOCAL PATH",
    usage: 'files ls <id> [DIR] | files get <id> PATH [LOCAL|-] | files put <id> LOCAL|- PATH',
    positionals: [{ name: 'action', required: true }, id, { name: 'args', required: false, rest: true }],
    options: { ...TEE_CHANNEL_OPTIONS },
    details:
      'Paths are relative to the workspace (/home/agent); symlinks are listed, never followed. get writes to LOCAL (default: stdout); put reads LOCAL (- for stdin) and replaces PATH (parents created). Limit 16 MiB a file.' +
      TEE_DETAILS,
    examples: [
      'agent-sandbox files ls sb-123 src',
      'agent-sandbox files get sb-123 notes.txt ./notes.txt',
      'agent-sandbox files put sb-123 ./data.csv data/data.csv --tee --measurement 7f51e1…',
    ],
  },
  secrets: {
    summary: 'manage the sandbox secrets: set K=V… | wipe | list',
    usage: 'secrets set <id> K=V|K… | secrets wipe <id> | secrets list <id>',
    positionals: [{ name: 'action', required: true }, id, { name: 'pairs', required: false, rest: true }],
    options: {
      sealed: {
        type: 'boolean',
        help: 'TEE-instance: verify the enclave first, then seal the values to its key (the operator never sees them)',
      },
      ...TEE_VERIFY_OPTIONS,
    },
    details:
      'set replaces all user secrets (the container is recreated with the same id). A bare K takes its value from your environment, so the value never appears in shell history or `ps`. list prints names only. With --sealed (TEE-instance services) nothing is sent unless `tee verify` passes; exit 8 when it does not.',
    examples: [
      'OPENAI_API_KEY=sk-… agent-sandbox secrets set sb-123 OPENAI_API_KEY',
      'agent-sandbox secrets set sb-123 OPENAI_API_KEY --sealed --measurement 7f51e1…',
    ],
  },
  tee: {
    summary: 'TEE-instance: verify the enclave (on-chain attestation and a fresh one over your nonce)',
    usage:
      'tee verify [--measurement HEX]… [--measurements-file FILE] [--blueprint ADDR] [--operator-address ADDR]',
    positionals: [{ name: 'action', required: true }],
    options: { ...TEE_VERIFY_OPTIONS },
    details:
      "Reads the v1 attestation document from the operator's reportProvisioned calldata, checks its keccak256 against the contract, then verifies it and a fresh attestation over a random nonce of yours against the vendor roots (Intel, AMD, AWS), the binding to (chain, service, sandbox, operator, sealing key) and YOUR measurement allow-list. Exit 0 verified, 8 not verified, 1 usage (e.g. no allow-list).",
    examples: [
      'agent-sandbox tee verify --operator http://op:9090 --rpc … --blueprint 0x… --service 2 --measurement 7f51e1…',
    ],
  },
  stop: { summary: 'stop a sandbox (keeps its disk)', usage: 'stop <id>', positionals: [id], options: {} },
  resume: { summary: 'resume a stopped sandbox', usage: 'resume <id>', positionals: [id], options: {} },
  snapshot: {
    summary: "snapshot the sandbox's workspace; prints the snapshot id to create from",
    usage: 'snapshot <id>',
    positionals: [id],
    options: {},
    details:
      'A sandbox keeps its latest snapshot (a stop takes one too, replacing it). `agent-sandbox create --from-snapshot <snapshot id>` makes a new sandbox from it while the sandbox is kept and not resumed since the snapshot; deleting the sandbox deletes its snapshot.',
  },
  workflow: {
    summary: 'workflows: create | list | runs | trigger | cancel',
    usage:
      'workflow create <sandbox-id>|--instance SERVICE_ID --name N (--command CMD|--prompt TEXT|--task TEXT) [--cron EXPR [--timezone TZ]] | workflow list | workflow runs <wf-id> | workflow trigger <wf-id> | workflow cancel <wf-id>',
    positionals: [
      { name: 'action', required: true },
      { name: 'target', required: false },
    ],
    options: {
      name: { type: 'string', arg: 'NAME', help: 'workflow name (1–64 characters)' },
      command: { type: 'string', arg: 'CMD', help: 'run this command in the sandbox' },
      prompt: { type: 'string', arg: 'TEXT', help: 'send this message to the sandbox agent (an agent run)' },
      task: { type: 'string', arg: 'TEXT', help: 'give the sandbox agent this task (an agent run)' },
      'workflow-json': { type: 'string', arg: 'JSON', help: 'the workflow_json as it goes on chain' },
      cron: {
        type: 'string',
        arg: 'EXPR',
        help: '5-field cron schedule, e.g. "*/15 * * * *" (default: manual only)',
      },
      timezone: { type: 'string', arg: 'TZ', help: 'IANA time zone of --cron (default UTC)' },
      timeout: { type: 'string', arg: 'SECONDS', help: "a run's time budget (default: the operator's)" },
      limit: { type: 'string', arg: 'N', help: 'runs: how many (default 20)' },
      output: { type: 'boolean', help: "runs: also print each command run's stdout" },
    },
    details:
      'create, trigger and cancel are jobs 2/3/4 from the owner account; they wait for the operator result and exit 5 with its reason when it refuses. list and runs read the operator API (owner only). With --instance SERVICE_ID (and --rpc/--blueprint of the instance contract, or --devnet) every action addresses the instance of that service: jobs go to service SERVICE_ID (Tangle is read from the contract unless --tangle is given) and list/runs ask the operator that reported it. A cron workflow that is still running when its next slot comes records that slot as skipped; slots missed while the operator was down run once on catch-up.',
    examples: [
      'agent-sandbox workflow create sb-123 --name nightly --command "make test" --cron "0 3 * * *" --timezone Europe/Berlin',
      'agent-sandbox workflow runs 12 --output',
      'agent-sandbox workflow create --instance 7 --rpc URL --blueprint ADDR --name daily --prompt "summarise notes.txt" --cron "0 9 * * *"',
    ],
  },
  delete: {
    summary: 'delete a sandbox (job 1 from the owner account)',
    usage: 'delete <id> [--no-wait]',
    positionals: [id],
    options: {
      'no-wait': {
        type: 'boolean',
        help: 'return after the job is on chain, without waiting for the result',
      },
      timeout: { type: 'string', arg: 'SECONDS', help: 'give up waiting after this long (default 300)' },
    },
  },
  help: {
    summary: 'show help for a command',
    usage: 'help [command]',
    positionals: [{ name: 'command', required: false }],
    options: {},
  },
};

Object.assign(COMMANDS, SHARING_COMMANDS, SSH_COMMANDS);

COMMANDS['service'] = serviceCommand(
  Object.fromEntries(
    Object.entries(COMMANDS['create']!.options).filter(([k]) => !['timeout', 'keep-unready'].includes(k)),
  ),
);
COMMANDS['service']!.options['timeout'] = {
  type: 'string',
  arg: 'SECONDS',
  help: 'request/wait: give up waiting for activation after this long (default 600)',
};

export interface ParsedArgs {
  command: string;
  globals: Record<string, string | boolean | undefined>;
  options: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  help: boolean;
}

const valueFlags = new Set(
  Object.entries(GLOBAL_OPTIONS)
    .filter(([, s]) => s.type === 'string')
    .map(([k]) => `--${k}`),
);

/**
 * Splits argv into command, global flags, command flags and positionals; USAGE errors otherwise.
 * Under --instance (or env AGENT_SANDBOX_INSTANCE) the `<id>` positional is filled in.
 */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv = {}): ParsedArgs {
  // The command is the first bare word that is not the value of a global flag.
  let commandIndex = -1;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (valueFlags.has(a)) i++;
      continue;
    }
    commandIndex = i;
    break;
  }
  const command = commandIndex === -1 ? '' : argv[commandIndex]!;
  const rest = commandIndex === -1 ? argv : [...argv.slice(0, commandIndex), ...argv.slice(commandIndex + 1)];
  const spec = command ? COMMANDS[command] : undefined;
  if (command && !spec) {
    throw new ClientError('USAGE', `unknown command "${command}"; run \`agent-sandbox --help\` for the list`);
  }
  const optionSpecs = { ...GLOBAL_OPTIONS, ...(spec?.options ?? {}) };
  const options = Object.fromEntries(
    Object.entries(optionSpecs).map(([k, s]) => [
      k,
      { type: s.type, ...(s.multiple ? { multiple: true } : {}), ...(s.short ? { short: s.short } : {}) },
    ]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  } catch (e) {
    const msg = (e as Error).message.split('\n')[0];
    throw new ClientError('USAGE', `${msg}; run \`agent-sandbox ${command ? `${command} ` : ''}--help\``);
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const globals: ParsedArgs['globals'] = {};
  const own: ParsedArgs['options'] = {};
  for (const [k, v] of Object.entries(values)) {
    if (k in GLOBAL_OPTIONS && !(spec && k in spec.options)) globals[k] = v as string | boolean | undefined;
    else own[k] = v;
  }
  const help = values.help === true;
  const positionals = parsed.positionals;
  const instance = globals.instance ?? (env.AGENT_SANDBOX_INSTANCE || undefined);
  if (typeof instance === 'string' && spec && !help) {
    globals.instance = instance;
    if (!/^\d+$/.test(instance))
      throw new ClientError('USAGE', `--instance must be a service id (a number), got "${instance}"`);
    if (NOT_FOR_INSTANCES[command])
      throw new ClientError('USAGE', `${command} does not take --instance: ${NOT_FOR_INSTANCES[command]}`);
    const at = spec.positionals.indexOf(id);
    if (at !== -1) positionals.splice(at, 0, INSTANCE_SANDBOX);
  }
  if (spec && !help && command !== 'help') {
    const required = spec.positionals.filter((p) => p.required);
    if (positionals.length < required.length) {
      const missing = required[positionals.length]!.name;
      throw new ClientError('USAGE', `${command}: missing <${missing}>; usage: agent-sandbox ${spec.usage}`);
    }
    const hasRest = spec.positionals.some((p) => p.rest);
    if (!hasRest && positionals.length > spec.positionals.length) {
      throw new ClientError(
        'USAGE',
        `${command}: unexpected argument "${positionals[spec.positionals.length]}"; usage: agent-sandbox ${spec.usage}`,
      );
    }
  }
  return { command, globals, options: own, positionals, help };
}
