// The shared set-up of the direct-backend TEE e2e (tee.test.ts): a TEE-instance service served by
// an `agent-sandbox-operator run` process on the `direct` backend over a configfs-tsm tree in a temp
// dir (test firmware signing SNP reports with a test PKI, trusted only in TEST_MODE), its API behind
// the relay the test plays the host with (tee-direct-host.ts). Every case shares the one operator.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createSevTestPki, saveSevTestPki } from '@agent-sandbox/attestation/testing';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { FakeTsmFirmware } from '@agent-sandbox/runtime/testing';
import Docker from 'dockerode';
import { afterAll, beforeAll, inject } from 'vitest';
import { execCli, freePort, logTail, operatorDir, serviceConfig } from './fixture.ts';
import { type HostRelay, startHostRelay } from './tee-direct-host.ts';

export const devnet = inject('devnet');
export const image = inject('sandboxImage');
export const RUN = `e2e-tee-${Date.now().toString(36)}`;
export const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-tee';
export const MEASUREMENT = 'a5'.repeat(48);
export const docker = new Docker();

export let dir = '';
export let serviceId = 0n;
export let fw: FakeTsmFirmware | undefined;
export const operators: ChildProcess[] = [];
export let operatorUrl = '';
/** The host's network between every client here and the operator API (operatorUrl is it). */
export let relay: HostRelay | undefined;
export const logFile = () => join(dir, 'operator.log');
export const operatorLog = () => logTail(logFile(), 4000);

/** A TEE-instance service (tee_type 3, SEV) served by operator1 alone; serviceOwner owns it. */
export async function newTeeService(jobs: DevnetJobs): Promise<bigint> {
  const config = serviceConfig({
    name: 'tee-e2e',
    // The chain's env is not applied to a TEE sandbox (the operator picks the RPC it is read through).
    env_json: '{"PLANTED_BY_CHAIN":"yes"}',
    max_lifetime_seconds: 3600n,
    idle_timeout_seconds: 900n,
    tee_required: true,
    tee_type: 3,
  });
  return jobs.newService('teeInstance', config, {
    operators: ['operator1'],
    permitted: [devnet.accounts.serviceOwner.address],
  });
}

export function operatorEnv(extra: Record<string, string>): Record<string, string> {
  return devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.teeInstance,
      serviceId,
      keyFile: join(dir, 'operator-ecdsa.key'),
      operatorId: `${RUN}-operator1`,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      extra: {
        OPERATOR_MODE: 'tee-instance',
        TEE_BACKEND: 'direct',
        TEE_DIRECT_TYPE: 'sev',
        TEE_TEST_ANCHORS_DIR: join(dir, 'pki'),
        SANDBOX_TEE_EXPECTED_MEASUREMENTS: MEASUREMENT,
        ...extra,
      },
    },
    randomBytes(32).toString('hex'),
  );
}

/** Resolves with the API URL on the "ready" line, or rejects with the log when it exits. */
export function startOperator(env: Record<string, string>): Promise<string> {
  const child = spawnOperator({ env, detached: true, stderr: openSync(logFile(), 'a') });
  operators.push(child);
  return operatorReady(child, { log: operatorLog });
}

export const cli = (args: string[], env: Record<string, string> = {}) =>
  execCli(args, { dir, privateKey: devnet.accounts.serviceOwner.privateKey, env });

export const target = () => [
  '--operator',
  operatorUrl,
  '--rpc',
  devnet.rpcUrl,
  '--blueprint',
  devnet.contracts.teeInstance,
  '--service',
  `${serviceId}`,
];
export const TEST_ANCHORS = () => ['--test-anchors', join(dir, 'pki')];
export const TEST_ENV = { AGENT_SANDBOX_TEST_MODE: 'true' };

/** Registers the suite's set-up (test PKI, firmware, the TEE service, the operator behind the host relay) and clean-up. */
export function useTeeDirectOperator(): void {
  beforeAll(async () => {
    ({ dir } = await operatorDir(devnet, RUN));
    const pki = await createSevTestPki();
    await saveSevTestPki(join(dir, 'pki'), pki);
    fw = await new FakeTsmFirmware({
      root: join(dir, 'tsm'),
      pki,
      measurement: Buffer.from(MEASUREMENT, 'hex'),
    }).start();
    serviceId = await newTeeService(new DevnetJobs(devnet));
    // The operator provisions (container start + health) and reports on chain before it is ready.
    const apiPort = await freePort();
    relay = await startHostRelay(`http://127.0.0.1:${apiPort}`);
    await startOperator(
      operatorEnv({
        DATA_DIR: join(dir, 'op'),
        TEE_TSM_REPORT_ROOT: join(dir, 'tsm'),
        OPERATOR_API_PORT: `${apiPort}`,
        OPERATOR_PUBLIC_URL: relay.url,
      }),
    );
    operatorUrl = relay.url;
  });

  afterAll(async () => {
    for (const op of operators) {
      if (op.pid && op.exitCode === null && op.signalCode === null) {
        const gone = new Promise((r) => op.once('exit', r));
        process.kill(-op.pid, 'SIGTERM');
        await gone;
      }
    }
    await fw?.stop();
    await relay?.close();
    for (const c of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });
}
