// Test fixture: a complete operator process as the blueprint manager would start it (environment
// variables only). Job 0 echoes its input after ECHO_DELAY_MS. Each handler start is appended to
// HANDLED_LOG as "<RUN_TAG> <callId>" (appendFileSync: it survives the SIGKILL the tests send).
// Prints READY once following jobs; SIGTERM stops it gracefully.
import { appendFileSync } from 'node:fs';
import pino from 'pino';
import {
  createRunner,
  loadEnvironment,
  loadKeystore,
  router,
  runnerOptionsFromEnvironment,
} from '../../index.ts';

const env = loadEnvironment();
const key = await loadKeystore({
  uri: env.keystoreUri,
  password: env.keystorePassword,
  testMode: env.testMode,
});
const delay = Number(process.env['ECHO_DELAY_MS'] ?? '0');
const handledLog = process.env['HANDLED_LOG'];
const tag = process.env['RUN_TAG'] ?? 'run';

const r = router().route(0, async (input, ctx) => {
  if (handledLog) appendFileSync(handledLog, `${tag} ${ctx.callId}\n`);
  if (delay > 0) await new Promise((res) => setTimeout(res, delay));
  return input;
});
const start = process.env['START_BLOCK'];
const runner = createRunner(
  runnerOptionsFromEnvironment(env, key, r, {
    startBlock: start ? BigInt(start) : 'latest',
    pollIntervalMs: Number(process.env['POLL_INTERVAL_MS'] ?? '100'),
    logger: pino({ level: process.env['LOG_LEVEL'] ?? 'warn' }, pino.destination(2)),
  }),
);
await runner.start();
process.stdout.write('READY\n');
process.once('SIGTERM', () => {
  runner.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
