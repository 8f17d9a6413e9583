// The operator's small start-up steps that need no other part: the key and data directory, the
// Docker engine check, the sandbox image, step timing and the shutdown list.
import { chmod, mkdir } from 'node:fs/promises';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { type BlueprintEnvironment, loadKeystore, type OperatorKey } from '@agent-sandbox/sdk';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import type { OperatorConfig } from './config.ts';

/** Runs one named start-up step, logging its start and how long it took. */
export const step = async <T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  log.info(`${what}…`);
  const out = await fn();
  log.info({ ms: Date.now() - t0 }, `${what}: done`);
  return out;
};

/** Default image: the configured one, or the project's sandbox image, built if missing (with progress). */
export async function resolveImage(cfg: OperatorConfig, log: Logger): Promise<string> {
  if (cfg.values.SANDBOX_IMAGE) return cfg.values.SANDBOX_IMAGE;
  const { tag, built } = await ensureSandboxImage({
    onProgress: (line) => log.info({ step: 'image' }, line),
  });
  log.info({ image: tag, built }, built ? 'sandbox image built' : 'sandbox image present');
  return tag;
}

/** The harness image: none, the configured tag, or ('build') the project's, built if missing. */
export async function resolveHarnessImage(cfg: OperatorConfig, log: Logger): Promise<string | undefined> {
  const v = cfg.values.SANDBOX_HARNESS_IMAGE;
  if (!v) return undefined;
  if (v !== 'build') return v;
  const { tag, built } = await ensureSandboxImage({
    withHarnesses: true,
    onProgress: (line) => log.info({ step: 'harness image' }, line),
  });
  log.info({ image: tag, built }, built ? 'harness image built' : 'harness image present');
  return tag;
}

/** Shutdown steps, run in reverse order of registration; a failing one is logged, the rest still run. */
export class Cleanup {
  readonly #fns: Array<() => Promise<void> | void> = [];
  readonly #log: Logger;
  constructor(log: Logger) {
    this.#log = log;
  }
  push(fn: () => Promise<void> | void): void {
    this.#fns.push(fn);
  }
  async unwind(): Promise<void> {
    for (const fn of this.#fns.reverse())
      await Promise.resolve(fn()).catch((err) => this.#log.error({ err }, 'cleanup step failed'));
    this.#fns.length = 0;
  }
}

/** The operator key, and the data directory (created, owner-only). */
export async function loadOperatorKey(
  env: BlueprintEnvironment,
  log: Logger,
  dataDir: string,
): Promise<OperatorKey> {
  const key = await loadKeystore({
    uri: env.keystoreUri,
    password: env.keystorePassword,
    testMode: env.testMode,
  });
  log.info({ operator: key.address, keyKind: key.kind }, 'operator key loaded');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700).catch(() => {});
  return key;
}

export async function checkDocker(): Promise<void> {
  try {
    await new Docker().ping();
  } catch (e) {
    throw new Error(
      `the Docker engine does not answer on /var/run/docker.sock (${(e as Error).message}); start dockerd`,
    );
  }
}
