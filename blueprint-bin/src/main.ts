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

Roles on a Tangle network (see the README, "Deploying against a real Tangle network"):
  deploy-blueprint  blueprint developer: deploy the managers and create the blueprints
  stake             operator: self-stake in MultiAssetDelegation (STAKING_CONTRACT)
  requests          operator: list / approve / reject the service requests naming you
  unregister        operator: leave BLUEPRINT_ID

Every setting is an environment variable; see the README's Configuration table.
Run \`agent-sandbox-operator <command> --help\` for a command's options.`,
  run: `Usage: agent-sandbox-operator run [--pretty]

Validates every variable first (one error lists every problem), then opens the encrypted store,
checks the Docker engine, builds the sandbox image if SANDBOX_IMAGE is unset, reconciles, starts
the operator API and the job runner, and the reaper/GC/session timers. SIGTERM/SIGINT: stops
taking jobs, finishes in-flight ones, closes the API and the store.

Required: HTTP_RPC_URL TANGLE_CONTRACT BLUEPRINT_ID SERVICE_ID DATA_DIR SESSION_AUTH_SECRET
Confirmations (JOB_CONFIRMATIONS, default 0): blocks a job waits below the head. 0 for the devnet
or a chain with instant finality, 0-1 on an L2 sequencer, 2 or more on an Ethereum-like L1, else
the chain's finality depth. Reorgs are repaired either way (README: a hostile or faulty RPC).
Runtime (SANDBOX_RUNTIME, default runc; SANDBOX_RUNTIMES_ALLOWED, default none): runsc runs
sandboxes under gVisor, a user-space kernel; the engine must list it (scripts/ensure-toolchain.sh
installs and registers it) and it cannot run under SANDBOX_EGRESS=none.
Registry images (SANDBOX_IMAGE_ALLOWLIST, e.g. registry.example.com/team/*,ghcr.io/acme/devbox):
creates may name images there; the operator pulls them with its own login
(SANDBOX_REGISTRY_AUTH_FILE, a docker config.json), at most SANDBOX_IMAGE_MAX_MB, pins them by
digest and mounts the sidecar read-only into them (README: images from a registry).
Options:
  --pretty   human-readable logs instead of JSON lines`,
  register: `Usage: agent-sandbox-operator register [--capacity N] [--rpc-address URL] [--pretty]

Registers the operator key for BLUEPRINT_ID on TANGLE_CONTRACT (idempotent). The capacity is sent
as abi.encode(uint32) registration input (default OPERATOR_MAX_CAPACITY; 0 = the contract default).
REGISTRATION_CAPTURE_ONLY=true writes the payload to REGISTRATION_OUTPUT_PATH instead.
Stake first: Tangle registers only an active operator of its staking contract (else
OperatorNotActive) with at least the blueprint's minimum stake (else InsufficientStake); see
\`agent-sandbox-operator stake --help\`.
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
  devnet: `Usage: agent-sandbox-operator devnet [--operator operator1|operator2] [--devnet-state FILE]
         [--tangle-state FILE --tangle-deployment FILE] [--pretty]

Starts (or reuses) the local devnet (anvil + contracts, .devnet/devnet.json), then runs an operator
for the cloud service with the devnet's operator key, a SESSION_AUTH_SECRET generated once and kept
in DATA_DIR (mode 0600), and prints the operator API URL. DATA_DIR defaults to .devnet/<operator>;
OPERATOR_API_PORT to 9090 (operator1) / 9091 (operator2), the URLs the devnet registered.
The operator uses the devnet's anvil, unless HTTP_RPC_URL (and WS_RPC_URL) name another way to
it (a proxy in front of it, say): HTTP_RPC_URL must reach the devnet's chain id and its Tangle
contract, or the command refuses to start and says so (exit 2).
Options:
  --operator NAME     which devnet operator key to run (default operator1)
  --devnet-state FILE  the devnet's state file (default .devnet/devnet.json): reuse the devnet
                      it describes when that one is running, else start one and write it there
  --tangle-state FILE  the real-protocol mode: an anvil state holding tnt-core 0.19's own
                      deployment (its script/LocalTestnet.s.sol, saved with anvil --dump-state);
                      anvil starts from it instead of the stand-in LocalTangle, and our managers,
                      blueprints, operators' registrations and services are added with the role
                      tools (operator1/2 are the state's staked operators). Env: TANGLE_STATE_FILE
  --tangle-deployment FILE  with --tangle-state: JSON naming the Tangle and MultiAssetDelegation
                      proxies in that state, {"contracts":{"tangle":"0x…","staking":"0x…"}}.
                      Env: TANGLE_DEPLOYMENT_FILE. The README's "Deploying against a real Tangle
                      network" says how to make both; this repository does not build tnt-core.
In the real-protocol mode the operator reads its manager from Tangle's getBlueprint
(BLUEPRINT_CONTRACT is not set for it).`,
  'deploy-blueprint': `Usage: agent-sandbox-operator deploy-blueprint --image REF --image-sha256 HEX
         [--modes cloud,instance,tee-instance] [--managers mode=0x…,…] [--metadata-uri URI] [--json]

Blueprint developer. For each mode, deploys the AgentSandboxBlueprint service manager (forge's
output; skip with --managers to reuse one) and calls Tangle's createBlueprint with the full
definition: metadata, jobs 0-4 (each job's ABI in its metadataUri; the TLV schemas stay empty
because the job bytes are ABI), the sandbox image as the container source (REF and its content
digest), fixed membership, pay-once pricing. The signer (KEYSTORE_URI) owns the blueprints.
Required: HTTP_RPC_URL TANGLE_CONTRACT
Options:
  --image REF           registry/name:tag of the sandbox image
  --image-sha256 HEX    its content digest (docker image inspect --format '{{.Id}}')
  --modes LIST          which blueprints (default all three)
  --managers LIST       reuse deployed managers, e.g. cloud=0xabc…
  --metadata-uri URI    the blueprint's JSON description (default: a data: URI)
  --json                print the result as JSON`,
  stake: `Usage: agent-sandbox-operator stake [--amount N] [--json]

Operator. Deposits a self-stake in Tangle's staking contract (STAKING_CONTRACT, the
MultiAssetDelegation proxy): registerOperator the first time (at least minOperatorStake), then
increaseStake; with a bond token set there, approves it and uses the *WithAsset calls. Without
--amount it only prints the status. Exit 0 when the operator is active, 1 when not.
Required: HTTP_RPC_URL TANGLE_CONTRACT STAKING_CONTRACT
Options:
  --amount N       how much to add, in whole units of the bond (e.g. 10, 0.5): ETH, or the
                   bond token at its own decimals (TNT on tnt-core's LocalTestnet)
  --json           print the result as JSON`,
  requests: `Usage: agent-sandbox-operator requests list [--state S,…|all] [--from-block N] [--json]
       agent-sandbox-operator requests approve <request id> [--json]
       agent-sandbox-operator requests reject <request id> [--json]

Operator. The service requests of BLUEPRINT_ID that name this operator (read from Tangle's events
and the requestService calls), by default the pending ones, with their terms (operators, ttl,
payment, config size). approve sends approveService (the service activates once every operator
approved); reject sends rejectService (the request closes, the payment is refunded). With
AUTO_APPROVE_REQUESTS=true, \`run\` approves requests within the AUTO_APPROVE_* limits by itself.
Required: HTTP_RPC_URL TANGLE_CONTRACT BLUEPRINT_ID
Options:
  --state LIST     pending (default), activated, rejected, expired, or all
  --from-block N   where to start reading events (default JOB_START_BLOCK if a number, else 0)
  --json           print the result as JSON`,
  unregister: `Usage: agent-sandbox-operator unregister [--json]

Operator. Leaves BLUEPRINT_ID (Tangle's unregisterOperator); refused while the operator serves an
active service of it (terminate or leave those first).
Required: HTTP_RPC_URL TANGLE_CONTRACT BLUEPRINT_ID
Options:
  --json   print the result as JSON`,
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
      'devnet-state': { type: 'string' },
      'tangle-state': { type: 'string' },
      'tangle-deployment': { type: 'string' },
      json: { type: 'boolean' },
      modes: { type: 'string' },
      image: { type: 'string' },
      'image-sha256': { type: 'string' },
      'metadata-uri': { type: 'string' },
      managers: { type: 'string' },
      amount: { type: 'string' },
      state: { type: 'string' },
      'from-block': { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP[command]}\n`);
    return 0;
  }
  const pretty = values.pretty ?? false;
  const json = values.json ?? false;
  if (['deploy-blueprint', 'stake', 'requests', 'unregister'].includes(command)) {
    const roles = await import('./role-commands.ts');
    if (command === 'deploy-blueprint') {
      return roles.cmdDeployBlueprint({
        json,
        modes: values.modes,
        image: values.image,
        imageSha256: values['image-sha256'],
        metadataUri: values['metadata-uri'],
        managers: values.managers,
      });
    }
    if (command === 'stake') return roles.cmdStake({ json, amount: values.amount });
    if (command === 'requests') {
      return roles.cmdRequests({
        json,
        action: positionals[0],
        id: positionals[1],
        state: values.state,
        fromBlock: values['from-block'],
      });
    }
    return roles.cmdUnregister({ json });
  }
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
      return cmdDevnet({
        pretty,
        operator: values.operator ?? 'operator1',
        stateFile: values['devnet-state'],
        tangleState: values['tangle-state'] ?? process.env['TANGLE_STATE_FILE'],
        tangleDeployment: values['tangle-deployment'] ?? process.env['TANGLE_DEPLOYMENT_FILE'],
      });
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
