// Test-only (the real-container set-up): a manager on a fresh encrypted store with a unique
// operator id (so a test's reconcile never touches another test's containers), and a cleanup
// that removes everything carrying that operator's label.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { DockerDriver } from '../../docker/driver.ts';
import { LABEL_OPERATOR } from '../../docker/labels.ts';
import { socketDispatcher } from '../../sidecar-client/socket.ts';
import { EncryptedStore } from '../../store/store.ts';
import type { SandboxRuntimeConfigInput } from '../config.ts';
import { SandboxManager } from '../manager.ts';
import type { SandboxRuntime } from '../runtimes.ts';

export const TEST_LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.suite': 'runtime-sandbox' };

let suiteRuntime: SandboxRuntime = 'runc';

/**
 * Runs the suites imported after this call under `runtime` (their rigs' default runtime): a
 * `<suite>.runsc.test.ts` file calls it, then imports `<suite>.test.ts`, so one suite proves both.
 */
export function useSuiteRuntime(runtime: SandboxRuntime): void {
  suiteRuntime = runtime;
}

/** The runtime the current suite's sandboxes run under (what its assertions may depend on). */
export function currentSuiteRuntime(): SandboxRuntime {
  return suiteRuntime;
}

export interface TestRig {
  manager: SandboxManager;
  store: EncryptedStore;
  registry: Registry;
  dir: string;
  storeDir: string;
  secret: string;
  operatorId: string;
  config: SandboxRuntimeConfigInput;
  clock: { now: number };
  reopen(): Promise<SandboxManager>;
  close(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function makeRig(
  image: string,
  overrides: Partial<SandboxRuntimeConfigInput> = {},
  opts: { openManager?: boolean; driver?: DockerDriver } = {},
): Promise<TestRig> {
  const dir = await mkdtemp(join(tmpdir(), 'asbx-rt-'));
  const secret = randomBytes(32).toString('hex');
  const operatorId = `test-${randomBytes(6).toString('hex')}`;
  const storeDir = join(dir, 'store');
  const config: SandboxRuntimeConfigInput = {
    operatorId,
    image,
    snapshotDir: join(dir, 'snapshots'),
    extraLabels: TEST_LABELS,
    healthTimeoutMs: 20_000,
    defaultMemoryMb: 256,
    stopTimeoutSeconds: 1,
    // Sidecar sockets (egress none) in a directory of this rig's own, short enough for sun_path.
    sidecarSocketDir: `/run/asbx-t-${randomBytes(6).toString('hex')}`,
    // runsc cannot run under egress none (runtimes.ts): a suite's `none` rigs stay on runc.
    ...(suiteRuntime === 'runc' || overrides.egress === 'none' ? {} : { runtime: suiteRuntime }),
    ...overrides,
  };
  const clock = { now: Date.now() };
  const driver = opts.driver ?? new DockerDriver();
  // With openManager false nothing is opened: a child process owns the store first.
  const lazy = opts.openManager === false;
  let store = lazy
    ? (undefined as unknown as EncryptedStore)
    : await EncryptedStore.open({ dir: storeDir, secret });
  let registry = new Registry();
  const open = () => SandboxManager.open({ config, store, registry, driver, now: () => clock.now });
  const rig: TestRig = {
    manager: lazy ? (undefined as unknown as SandboxManager) : await open(),
    store,
    registry,
    dir,
    storeDir,
    secret,
    operatorId,
    config,
    clock,
    async reopen() {
      await rig.manager?.close();
      await store?.close();
      store = await EncryptedStore.open({ dir: storeDir, secret });
      registry = new Registry();
      rig.store = store;
      rig.registry = registry;
      rig.manager = await open();
      return rig.manager;
    },
    async close() {
      await rig.manager?.close();
      await store?.close();
    },
    async cleanup() {
      await rig.close();
      await removeOperatorObjects(driver, operatorId);
      await rm(dir, { recursive: true, force: true });
      if (config.sidecarSocketDir) await rm(config.sidecarSocketDir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** Removes every container, volume and image labelled with this (test) operator id. */
export async function removeOperatorObjects(driver: DockerDriver, operatorId: string): Promise<void> {
  const filters = { label: [`${LABEL_OPERATOR}=${operatorId}`] };
  for (const c of await driver.docker.listContainers({ all: true, filters }))
    await driver.removeContainer(c.Id);
  const vols = await driver.docker.listVolumes({ filters });
  for (const v of vols.Volumes ?? []) await driver.removeVolume(v.Name);
  for (const i of await driver.docker.listImages({ filters })) await driver.removeImage(i.Id);
}

/** Runs a command in the sandbox through its sidecar (the real HTTP contract, over its socket if it has one). */
export async function sidecarExec(
  endpoint: { url: string; token: string; socketPath?: string },
  command: string,
  timeout?: number,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const res = await fetch(`${endpoint.url}/terminals/commands`, {
    method: 'POST',
    headers: { authorization: `Bearer ${endpoint.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command, ...(timeout ? { timeout } : {}) }),
    ...(endpoint.socketPath ? { dispatcher: socketDispatcher(endpoint.socketPath) } : {}),
  } as RequestInit);
  const body = (await res.json()) as { result: { exitCode: number; stdout: string; stderr: string } };
  if (!res.ok) throw new Error(`exec failed with ${res.status}: ${JSON.stringify(body)}`);
  return body.result;
}
