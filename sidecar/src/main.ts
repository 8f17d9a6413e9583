// Entry point of the bundled sidecar inside the sandbox container (PID 1 is tini, which forwards signals here).
import { loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { startSidecar } from './server.ts';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    process.stderr.write(`sidecar: ${(err as Error).message}\n`);
    process.exit(2);
  }
  // Nothing the sidecar starts may inherit its token, even by accident.
  delete process.env['SIDECAR_AUTH_TOKEN'];
  const log = createLogger(config.logLevel);
  const sidecar = await startSidecar(config, log);
  const stop = (signal: string) => {
    log.info({ signal }, 'sidecar stopping');
    const force = setTimeout(() => process.exit(0), 3_000);
    force.unref();
    sidecar.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`sidecar: failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
