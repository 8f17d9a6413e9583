// The devnet CLI's commands: `up` (start, deploy, print, stay in the foreground), `status`, `down`, help.
import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { rpcChainId } from './anvil.ts';
import { DEFAULT_STATE_FILE, DevnetError } from './errors.ts';
import { startDevnet } from './index.ts';
import { type RealTangleFiles, TANGLE_DEPLOYMENT_ENV, TANGLE_STATE_ENV } from './real-tangle.ts';
import {
  type DevnetInfo,
  isDevnetAlive,
  readDevnetInfo,
  readDevnetPid,
  removeDevnetPid,
  writeDevnetPid,
} from './state.ts';
import { formatSummary } from './summary.ts';

const HELP = `Usage: tsx devnet/main.ts [command] [options]

A local chain for this project: anvil (chain id 31337, instant mining) with LocalTangle, the
AgentSandboxBlueprint manager deployed three times (cloud, instance, TEE instance) and a bare
BlueprintServiceManagerBase ("toy"); four blueprints, two operators registered on each, and one
active service per blueprint. Everything is described in one JSON file (default .devnet/devnet.json).

Commands:
  up       (default) start the devnet and print what it deployed; stays in the foreground until
           Ctrl-C or SIGTERM, then stops anvil. If the state file describes a devnet that is
           running, prints it and exits 0 instead of starting a second one.
  status   print the devnet the state file describes; exit 0 if it is running, 1 if not.
  down     stop the devnet started by \`up\` (foreground in another terminal, or --detach).

Options:
  --port N       RPC port for \`up\` (default 8545; 0 picks a free port)
  --state FILE   the state file (default .devnet/devnet.json)
  --detach       \`up\`: start, print and return; anvil keeps running until \`down\`
  --fresh        \`up\`: never reuse a running devnet
  --json         print the devnet JSON instead of the summary
  --tangle-state FILE       \`up\`: the real-protocol mode. anvil starts from this saved state
                 (tnt-core 0.19's own LocalTestnet deployment, \`anvil --dump-state\`) instead of
                 deploying LocalTangle/LocalStaking; our managers, blueprints, registrations and
                 services are added with the role tools. Env: TANGLE_STATE_FILE
  --tangle-deployment FILE  with --tangle-state: JSON naming its Tangle and MultiAssetDelegation,
                 {"contracts":{"tangle":"0x…","staking":"0x…"}}. Env: TANGLE_DEPLOYMENT_FILE
                 (how to make both: the README's "Deploying against a real Tangle network")
  -h, --help     this text

The accounts are anvil's well-known dev keys (mnemonic "test test ... junk"): public, for this
local chain only, so they are written to the state file in plain text on purpose.`;

/** Where the CLI writes: stdout for results, stderr for progress and errors. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}
const processIo: CliIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
};
let io: CliIo = processIo;

/** Runs the CLI with `argv` (without node and script) and resolves to its exit code. */
export function runDevnetCli(argv: string[], cliIo: CliIo = processIo): Promise<number> {
  io = cliIo;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`devnet: ${(err as Error).message}\n\n${HELP}\n`);
    return Promise.resolve(2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`${HELP}\n`);
    return Promise.resolve(0);
  }
  const command = positionals[0] ?? 'up';
  const stateFile = resolve(values.state ?? DEFAULT_STATE_FILE);
  const port = values.port === undefined ? 8545 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.err(`devnet: --port must be a port number (0-65535), got ${values.port}\n`);
    return Promise.resolve(2);
  }
  const out = (info: DevnetInfo) =>
    io.out(`${values.json ? JSON.stringify(info, null, 2) : formatSummary(info, stateFile)}\n`);
  switch (command) {
    case 'up':
      return up({
        port,
        stateFile,
        detach: !!values.detach,
        fresh: !!values.fresh,
        out,
        tangle: {
          stateFile: values['tangle-state'] ?? process.env[TANGLE_STATE_ENV],
          deploymentFile: values['tangle-deployment'] ?? process.env[TANGLE_DEPLOYMENT_ENV],
        },
      });
    case 'status':
      return status(stateFile, out);
    case 'down':
      return down(stateFile);
    default:
      io.err(`devnet: unknown command "${command}"\n\n${HELP}\n`);
      return Promise.resolve(2);
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      state: { type: 'string' },
      detach: { type: 'boolean' },
      fresh: { type: 'boolean' },
      json: { type: 'boolean' },
      'tangle-state': { type: 'string' },
      'tangle-deployment': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

const say = (line: string) => io.err(`[devnet] ${line}\n`);

async function up(o: {
  port: number;
  stateFile: string;
  detach: boolean;
  fresh: boolean;
  out: (i: DevnetInfo) => void;
  tangle: Partial<RealTangleFiles>;
}): Promise<number> {
  // `tsx` runs this file in a child node; if that wrapper is killed hard we are re-parented and
  // nobody would ever stop us (or anvil). The parent is taken now, before start-up prints
  // anything: taken later, a wrapper killed in between leaves the reaper looking like the parent.
  const parent = process.ppid;
  let started: Awaited<ReturnType<typeof startDevnet>>;
  try {
    started = await startDevnet({
      port: o.port,
      stateFile: o.stateFile,
      reuse: !o.fresh,
      detach: o.detach,
      log: say,
      tangle: o.tangle,
    });
  } catch (err) {
    if (err instanceof DevnetError && ['TANGLE_STATE_MISSING', 'STATE_INVALID'].includes(err.code)) {
      say(err.message);
      return 2;
    }
    throw err;
  }
  if (started.reused) {
    say('not starting a second one; stop it with Ctrl-C where it runs, or `tsx devnet/main.ts down`');
    o.out(started.info);
    return 0;
  }
  // startDevnet records a detached anvil itself; a foreground devnet is kept by this process.
  if (!o.detach) {
    writeDevnetPid(o.stateFile, {
      pid: process.pid,
      detached: false,
      rpcUrl: started.info.rpcUrl,
      startedAt: started.info.startedAt,
    });
  }
  o.out(started.info);
  if (o.detach) {
    say(`anvil runs detached (pid ${started.pid}); stop it with \`tsx devnet/main.ts down\``);
    return 0;
  }
  say('running; Ctrl-C stops it');
  return await new Promise<number>((done) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      say(`${signal}: stopping anvil`);
      await started.stop();
      removeDevnetPid(o.stateFile);
      say('stopped');
      done(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
    // A foreground devnet ends with whoever started it.
    const orphaned = () => process.ppid !== parent;
    if (orphaned()) void stop('parent exited');
    setInterval(() => {
      if (orphaned()) void stop('parent exited');
    }, 1000).unref();
    void started.exited.then(() => {
      if (stopping) return;
      say('anvil exited on its own; the devnet is gone');
      void started.stop().then(() => {
        removeDevnetPid(o.stateFile);
        done(1);
      });
    });
  });
}

async function status(stateFile: string, out: (i: DevnetInfo) => void): Promise<number> {
  const info = readDevnetInfo(stateFile);
  if (!info) {
    say(
      `no devnet: ${stateFile} does not exist (start one with \`npm run demo\` or \`tsx devnet/main.ts up\`)`,
    );
    return 1;
  }
  if (!(await isDevnetAlive(info))) {
    say(`${stateFile} describes a devnet at ${info.rpcUrl} that is not running`);
    return 1;
  }
  say(`devnet running at ${info.rpcUrl}`);
  out(info);
  return 0;
}

async function down(stateFile: string): Promise<number> {
  const info = readDevnetInfo(stateFile);
  const record = readDevnetPid(stateFile);
  if (!record || !info || record.rpcUrl !== info.rpcUrl || record.startedAt !== info.startedAt) {
    if (info && (await isDevnetAlive(info))) {
      say(
        `the devnet at ${info.rpcUrl} was not started by \`up\` here (no matching pid file); stop its process`,
      );
      return 1;
    }
    say('no devnet running');
    removeDevnetPid(stateFile);
    return 0;
  }
  if (!isOurProcess(record.pid)) {
    say(`process ${record.pid} is not a devnet any more; cleaning up`);
  } else {
    process.kill(record.pid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while ((await rpcChainId(info.rpcUrl, 300)) !== undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // The foreground `up` removes these itself; a detached anvil cannot.
  removeDevnetPid(stateFile);
  if (readDevnetInfo(stateFile)?.startedAt === info.startedAt) rmSync(stateFile, { force: true });
  say(`stopped the devnet at ${info.rpcUrl}`);
  return 0;
}

/** Only signal a pid that still runs anvil or this CLI (pids get reused). */
function isOurProcess(pid: number): boolean {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('anvil') || cmd.includes('devnet.ts');
  } catch {
    return false;
  }
}
