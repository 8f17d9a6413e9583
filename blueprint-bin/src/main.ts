// agent-sandbox-operator: the operator program's entry point and subcommands
// (run, register, keys, devnet, status). Each validates its whole configuration before acting.
import { parseArgs } from 'node:util';
import { ConfigError } from './config-error.ts';

const HELP: Record<string, string> = {
  main: `agent-sandbox-operator — the Tangle operator that rents out AI-agent sandboxes

Usage: agent-sandbox-operator <command> [options]

Commands:
  run        run the operator (store, Docker, reconcile, API, jobs, timers)
  register   register this operator for BLUEPRINT_ID with its capacity
  keys       create or show the operator key (show never prints the private key)
  devnet     start the local devnet and an operator (operator1) against it
  status     show the operator's /health and capabilities, or its local store summary

Every setting is an environment variable; see the README's Configuration table.
Run \`agent-sandbox-operator <command> --help\` for a command's options.`,
  run: `Usage: agent-sandbox-operator run [--pretty]

Validates every variable first (one error lists every problem), then opens the encrypted store,
checks the Docker engine, builds the sandbox image if SANDBOX_IMAGE is unset, reconciles, starts
the operator API and the job runner, and the reaper/GC/session timers. SIGTERM/SIGINT: stops
taking jobs, finishes in-flight ones, closes the API and the store.

Required: HTTP_RPC_URL TANGLE_CONTRACT BLUEPRINT_ID SERVICE_ID DATA_DIR SESSION_AUTH_SECRET
Options:
  --pretty   human-readable logs instead of JSON lines`,
  register: `Usage: agent-sandbox-operator register [--capacity N] [--rpc-address URL] [--pretty]

Registers the operator key for BLUEPRINT_ID on TANGLE_CONTRACT (idempotent). The capacity is sent
as abi.encode(uint32) registration input (default OPERATOR_MAX_CAPACITY; 0 = the contract default).
REGISTRATION_CAPTURE_ONLY=true writes the payload to REGISTRATION_OUTPUT_PATH instead.
Options:
  --capacity N        capacity to declare
  --rpc-address URL   where clients reach this operator (default OPERATOR_RPC_ADDRESS / OPERATOR_PUBLIC_URL)`,
  keys: `Usage: agent-sandbox-operator keys <create|show> [--force]

  create   new key at KEYSTORE_URI: encrypted with KEYSTORE_PASSWORD, or (TEST_MODE=true only)
           a plain dev key file. Prints the address and public key.
  show     prints the address and 65-byte public key of the key at KEYSTORE_URI.
The private key is never printed.
Options:
  --force  replace an existing key file (create)`,
  devnet: `Usage: agent-sandbox-operator devnet [--operator operator1|operator2] [--pretty]

Starts (or reuses) the local devnet (anvil + contracts, .devnet/devnet.json), then runs an operator
for the cloud service with the devnet's operator key, a SESSION_AUTH_SECRET generated once and kept
in DATA_DIR (mode 0600), and prints the operator API URL. DATA_DIR defaults to .devnet/<operator>;
OPERATOR_API_PORT to 9090 (operator1) / 9091 (operator2), the URLs the devnet registered.`,
  status: `Usage: agent-sandbox-operator status [--url URL] [--local]

Reads GET /health and /api/capabilities from the operator (URL: --url, OPERATOR_PUBLIC_URL or
http://OPERATOR_API_HOST:OPERATOR_API_PORT). --local (or an unreachable API) prints the local
store summary instead (needs DATA_DIR and SESSION_AUTH_SECRET, and the operator not running).`,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${HELP['main']}\n`);
    return command ? 0 : 2;
  }
  if (!(command in HELP) || command === 'main') {
    process.stderr.write(`unknown command "${command}"\n\n${HELP['main']}\n`);
    return 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      pretty: { type: 'boolean' },
      force: { type: 'boolean' },
      local: { type: 'boolean' },
      url: { type: 'string' },
      capacity: { type: 'string' },
      'rpc-address': { type: 'string' },
      operator: { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP[command]}\n`);
    return 0;
  }
  const pretty = values.pretty ?? false;
  // Loaded only now: help and usage errors answer without loading the chain and runtime stacks.
  const { cmdDevnet, cmdKeys, cmdRegister, cmdRun, cmdStatus } = await import('./commands.ts');
  switch (command) {
    case 'run':
      return cmdRun({ pretty });
    case 'register':
      return cmdRegister({ pretty, capacity: values.capacity, rpcAddress: values['rpc-address'] });
    case 'keys':
      return cmdKeys({ action: positionals[0], force: values.force ?? false });
    case 'devnet':
      return cmdDevnet({ pretty, operator: values.operator ?? 'operator1' });
    case 'status':
      return cmdStatus({ url: values.url, local: values.local ?? false });
    default:
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // `run` has closed everything it opened; keep-alive sockets of HTTP clients must not hold the exit.
    if (process.argv[2] === 'run' || process.argv[2] === 'devnet')
      setTimeout(() => process.exit(code), 200).unref();
  },
  (e: unknown) => {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    const err = e as Error & { code?: string };
    process.stderr.write(
      `agent-sandbox-operator: ${err.code ? `[${err.code}] ` : ''}${err.message ?? String(e)}\n`,
    );
    process.exitCode = 1;
  },
);
