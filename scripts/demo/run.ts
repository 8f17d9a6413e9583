// `npm run demo` after the builds: starts the devnet and both operators, walks a sandbox through
// its life with the CLI, then keeps everything running until Ctrl-C (or stops at once with --exit).
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { StartedDevnet } from '@agent-sandbox/devnet';
import { instanceWalkthrough } from './instance.ts';
import {
  DEMO_DIR,
  DEMO_LABEL,
  LOCK_FILE,
  OPERATOR_PORTS,
  type OperatorName,
  operatorHealthy,
  portAnswers,
  prepareDataDirs,
  type RunningOperator,
  releaseLock,
  removeDemoContainers,
  runningDemoPid,
  STATE_FILE,
  startDemoDevnet,
  startOperator,
  stopOperator,
  takeLock,
} from './stack.ts';
import { teeWalkthrough } from './tee.ts';
import { header, say, walkthrough } from './walkthrough.ts';

const HELP = `Usage: npm run demo [-- --exit] [-- --no-walkthrough] [-- --tee]

Starts the local devnet (anvil on 127.0.0.1:8545 + contracts) and two operators (operator1 on
:9090, operator2 on :9091), walks one sandbox through create → login → exec → prompt → secrets →
delete with the agent-sandbox CLI, then an instance service with the role tools (the user's
\`service request\`, operator1's \`requests list\` / \`requests approve\`, its instance-mode operator
on 127.0.0.1:9093 provisioning the service's sandbox, exec in it, \`service terminate\`), then keeps
the devnet and operators running for you to try the CLI yourself. Ctrl-C stops everything the demo started (operators, their sandboxes, anvil).

  --exit            stop everything after the walk-through instead of staying up
  --no-walkthrough  only start the devnet and the operators (no walk-through, no instance walk)
  --tee             then the TEE-instance step: an operator on the direct backend over a test
                    configfs-tsm tree (test SEV PKI, no TEE hardware), on 127.0.0.1:9092; the CLI
                    verifies the enclave, seals a secret to it, exec sees it; the step stops its
                    operator when done

A second \`npm run demo\` while one is running reuses it: it runs the walk-through against the
running operators and leaves them to the first demo.`;

const t0 = Date.now();
const secs = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
/** Set once the stop has begun; the exit waits for it. */
let stopping: Promise<void> | undefined;
const rel = (p: string) => p.replace(`${process.cwd()}/`, '');

function usage(): void {
  say(`
${'─'.repeat(78)}
The devnet and both operators keep running. In another terminal, from ${process.cwd()}:

  export AGENT_SANDBOX_DEVNET=${rel(STATE_FILE)}
  npx agent-sandbox create --name mine          # prints the new sandbox id
  npx agent-sandbox exec <id> -- 'ls -la'
  npx agent-sandbox terminal <id>               # interactive shell; Ctrl-] leaves
  npx agent-sandbox delete <id>
  npx agent-sandbox --help

Operators: operator1 http://127.0.0.1:${OPERATOR_PORTS.operator1}  operator2 http://127.0.0.1:${OPERATOR_PORTS.operator2}
Console: http://127.0.0.1:${OPERATOR_PORTS.operator1}/console/  (web console: sign in with a browser wallet on this devnet)
  logs:    ${rel(DEMO_DIR)}/operator1.log, ${rel(DEMO_DIR)}/operator2.log
  status:  node blueprint-bin/dist/main.mjs status --url http://127.0.0.1:${OPERATOR_PORTS.operator1}
Devnet:  ${rel(STATE_FILE)} (chain, contracts, service ids, dev keys)

Stop: press Ctrl-C here (or \`kill ${process.pid}\`): operators shut down, their sandboxes' containers
are removed, anvil stops.`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      exit: { type: 'boolean' },
      'no-walkthrough': { type: 'boolean' },
      tee: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    say(HELP);
    return 0;
  }

  const other = runningDemoPid();
  if (other) {
    const urls = Object.values(OPERATOR_PORTS).map((p) => `http://127.0.0.1:${p}`);
    const healthy = (await Promise.all(urls.map(operatorHealthy))).every(Boolean);
    if (!healthy) {
      say(
        `A demo is already starting or stopping (pid ${other}, ${rel(LOCK_FILE)}), and its operators do not`,
      );
      say(`answer yet. Wait for it, or stop it with Ctrl-C in its terminal (or \`kill ${other}\`).`);
      return 1;
    }
    header(`a demo is already running (pid ${other}): reusing its devnet and operators`);
    if (!values['no-walkthrough']) await walkthrough();
    say(`\nWalk-through done in ${secs()}. The demo in pid ${other} keeps running; Ctrl-C there stops it.`);
    return 0;
  }

  // Nothing else answers on the operator ports we must serve (the devnet registered them).
  for (const [name, port] of Object.entries(OPERATOR_PORTS)) {
    if (await portAnswers(port)) {
      say(`Port ${port} (${name}'s registered API address) is already in use by another program.`);
      say('Stop it (an `agent-sandbox-operator devnet` you started by hand?) and run the demo again.');
      return 1;
    }
  }

  takeLock();
  const ops: RunningOperator[] = [];
  let devnet: StartedDevnet | undefined;
  let tee: Awaited<ReturnType<typeof teeWalkthrough>> | undefined;
  const stopAll = (why: string) => {
    stopping ??= (async () => {
      say(`\n${why}: stopping the operators, their sandboxes and the devnet…`);
      await Promise.all([...ops.map((op) => stopOperator(op)), tee?.stop()]);
      const removed = await removeDemoContainers().catch(() => 0);
      if (removed) say(`removed ${removed} sandbox container(s) the operators had created`);
      if (devnet && !devnet.reused) await devnet.stop();
      else if (devnet)
        say(`the devnet at ${devnet.info.rpcUrl} was already running before the demo: left running`);
      releaseLock();
      say('stopped.');
    })();
    return stopping;
  };
  let interrupted = false;
  let firstSignalAt = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    // One Ctrl-C can arrive twice (from the terminal and relayed by npm): only a later one forces.
    if (interrupted) {
      if (Date.now() - firstSignalAt < 2000) return;
      say('second signal: exiting now (use `npm run demo` again to clean up what is left)');
      process.exit(130);
    }
    interrupted = true;
    firstSignalAt = Date.now();
    void stopAll(`received ${sig}`).then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    header('devnet: anvil + contracts + blueprints + operators registered + services');
    const orphans = await removeDemoContainers();
    if (orphans) say(`removed ${orphans} container(s) left by an earlier demo that did not stop cleanly`);
    devnet = await startDemoDevnet((line) => say(`[devnet] ${line}`));
    say(
      `chain ${devnet.info.chainId} at ${devnet.info.rpcUrl}; Tangle ${devnet.info.contracts.tangle}; cloud service ${devnet.info.services.cloud}`,
    );
    prepareDataDirs(devnet);
    if (interrupted) return 130;

    header('operators: operator1 and operator2 (both serve the cloud service)');
    say('$ node blueprint-bin/dist/main.mjs devnet --operator operator1   # and operator2');
    const names = Object.keys(OPERATOR_PORTS) as OperatorName[];
    const started = await Promise.allSettled(names.map((n) => startOperator(n, process.env.SANDBOX_IMAGE)));
    for (const s of started) if (s.status === 'fulfilled') ops.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    for (const op of ops) say(`${op.name} ${op.address} ready at ${op.url}  (log: ${rel(op.logFile)})`);
    say(`devnet and operators up after ${secs()}`);
    if (interrupted) return 130;

    if (!values['no-walkthrough']) {
      await walkthrough();
      header(`walk-through done, ${secs()} after the builds`);
      if (devnet) {
        const r = await instanceWalkthrough({
          devnet: devnet.info,
          dir: join(DEMO_DIR, 'instance'),
          port: 9093,
          image: process.env.SANDBOX_IMAGE,
          label: DEMO_LABEL,
        });
        if (!r.gone) throw new Error(`the instance sandbox ${r.sandboxId} is still there after terminate`);
        header(
          `instance walk done: request ${r.requestId} → service ${r.serviceId} → ${r.sandboxId} → terminated, ${secs()} after the builds`,
        );
      }
    }
    if (values.tee && devnet) {
      const r = await teeWalkthrough({
        devnet: devnet.info,
        dir: join(DEMO_DIR, 'tee'),
        port: 9092,
        image: process.env.SANDBOX_IMAGE,
        label: DEMO_LABEL,
        // Kept running with the rest until Ctrl-C, unless the demo exits at the end.
        keep: !values.exit,
      });
      tee = r;
      if (!r.secretSeen) throw new Error('the sealed secret did not reach the TEE sandbox');
      header(`TEE-instance step done: sealed secret visible in ${r.sandboxId}, ${secs()} after the builds`);
      if (!values.exit) {
        say(`TEE operator (service ${r.serviceId}, test firmware) keeps running at ${r.url}:`);
        say(
          `  AGENT_SANDBOX_TEST_MODE=true npx agent-sandbox tee verify --operator ${r.url} --devnet ${rel(STATE_FILE)} --account serviceOwner --rpc ${devnet.info.rpcUrl} \\`,
        );
        say(`    --blueprint ${devnet.info.contracts.teeInstance} --service ${r.serviceId} \\`);
        say(
          `    --measurement ${'a5'.repeat(48)} --test-anchors ${rel(join(DEMO_DIR, 'tee', 'pki'))}  # AGENT_SANDBOX_TEST_MODE=true`,
        );
      }
    }
  } catch (e) {
    if (interrupted) return 130;
    say(`\ndemo failed: ${(e as Error).message}`);
    await stopAll('failure');
    return 1;
  }
  if (values.exit) {
    await stopAll('--exit');
    return 0;
  }
  usage();
  // Stay up until a signal; an operator that dies takes the demo down with a clear message.
  await new Promise<void>((done) => {
    for (const op of ops) {
      op.child.once('exit', (code, signal) => {
        if (stopping) return;
        say(`\n${op.name} exited (${signal ?? code}); see ${rel(op.logFile)}`);
        void stopAll('an operator stopped').then(done);
      });
    }
    void devnet?.exited.then(() => {
      if (stopping) return;
      say('\nanvil exited; see .devnet/anvil.log');
      void stopAll('the devnet stopped').then(done);
    });
  });
  return 1;
}

main().then(
  async (code) => {
    if (stopping) await stopping;
    process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`demo: ${(e as Error)?.stack ?? String(e)}\n`);
    releaseLock();
    process.exit(1);
  },
);
