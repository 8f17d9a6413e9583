// The demo's TEE-instance step (`npm run demo -- --tee`): a TEE-instance service (SEV) served by an
// operator on the `direct` backend over a configfs-tsm tree in a temp dir, whose test firmware signs
// SNP reports with a test PKI (no TEE hardware here; test anchors are trusted only in TEST_MODE).
// The CLI verifies the enclave (chain + fresh nonce), seals a secret to it, and exec sees it.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSevTestPki, saveSevTestPki } from '@agent-sandbox/attestation/testing';
import { operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { SANDBOX_CREATE_INPUT } from '@agent-sandbox/blueprint-lib';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import type { DevnetInfo } from '@agent-sandbox/devnet';
import { FakeTsmFirmware } from '@agent-sandbox/runtime/testing';
import { encodeAbiParameters } from 'viem';
import { ROOT } from './stack.ts';
import { cli, header, must, say } from './walkthrough.ts';

export interface TeeDemoOptions {
  devnet: DevnetInfo;
  /** Where the PKI, the configfs-tsm tree, the operator's data and log go. */
  dir: string;
  port: number;
  image: string | undefined;
  label: string;
  /**
   * Leave the TEE operator and its test firmware running after a successful step (the demo's
   * foreground mode): the result's `stop()` ends both. Otherwise both stop before it returns.
   */
  keep?: boolean;
}

export interface TeeDemoResult {
  sandboxId: string;
  secretSeen: boolean;
  serviceId: bigint;
  /** The TEE operator's API (still answering only with `keep`). */
  url: string;
  /** Stops the TEE operator and the test firmware (a no-op once stopped). */
  stop(): Promise<void>;
}

const MEASUREMENT = 'a5'.repeat(48);

async function newTeeService(devnet: DevnetInfo): Promise<bigint> {
  const jobs = new DevnetJobs(devnet);
  const config = encodeAbiParameters(
    [{ type: 'tuple', components: SANDBOX_CREATE_INPUT }],
    [
      {
        name: 'demo-tee',
        image: '',
        stack: '',
        agent_identifier: '',
        env_json: '{}',
        metadata_json: '{}',
        ssh_enabled: false,
        ssh_public_key: '',
        web_terminal_enabled: false,
        max_lifetime_seconds: 3600n,
        idle_timeout_seconds: 3600n,
        cpu_cores: 1n,
        memory_mb: 512n,
        disk_gb: 1n,
        tee_required: true,
        tee_type: 3,
        attestation_nonce: '',
        capabilities_json: '',
      },
    ],
  );
  return jobs.newService('teeInstance', config, {
    operators: ['operator1'],
    permitted: [devnet.accounts.serviceOwner.address],
  });
}

function startTeeOperator(
  o: TeeDemoOptions,
  serviceId: bigint,
  logFile: string,
): Promise<{ url: string; child: ChildProcess }> {
  writeFileSync(join(o.dir, 'operator-ecdsa.key'), `${o.devnet.accounts.operator1.privateKey}\n`, {
    mode: 0o600,
  });
  const child = spawnOperator({
    cwd: ROOT,
    detached: true,
    stderr: openSync(logFile, 'a'),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      HTTP_RPC_URL: o.devnet.rpcUrl,
      TANGLE_CONTRACT: o.devnet.contracts.tangle,
      BLUEPRINT_ID: `${o.devnet.blueprints.teeInstance}`,
      SERVICE_ID: `${serviceId}`,
      DATA_DIR: join(o.dir, 'operator'),
      KEYSTORE_URI: join(o.dir, 'operator-ecdsa.key'),
      TEST_MODE: 'true',
      OPERATOR_MODE: 'tee-instance',
      OPERATOR_API_PORT: `${o.port}`,
      SESSION_AUTH_SECRET: randomBytes(32).toString('hex'),
      SANDBOX_EXTRA_LABELS: o.label,
      JOB_POLL_INTERVAL_MS: '300',
      TEE_BACKEND: 'direct',
      TEE_DIRECT_TYPE: 'sev',
      TEE_TSM_REPORT_ROOT: join(o.dir, 'tsm'),
      TEE_TEST_ANCHORS_DIR: join(o.dir, 'pki'),
      ...(o.image ? { SANDBOX_IMAGE: o.image } : {}),
    },
  });
  const log = () => `last lines:\n${readFileSync(logFile, 'utf8').slice(-2000)}`;
  return operatorReady(child, { name: 'the TEE operator', log }).then((url) => ({ url, child }));
}

/** Runs the step; stops the TEE operator and the test firmware it started unless `keep` (and it worked). */
export async function teeWalkthrough(o: TeeDemoOptions): Promise<TeeDemoResult> {
  // Each run makes a new TEE service, PKI and firmware: the last run's tree (its FIFOs) and operator
  // data would only get in the way.
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(o.dir, { recursive: true });
  header('TEE-instance: test PKI + configfs-tsm tree in a temp dir (no TEE hardware on this machine)');
  const pki = await createSevTestPki();
  await saveSevTestPki(join(o.dir, 'pki'), pki);
  const fw = await new FakeTsmFirmware({
    root: join(o.dir, 'tsm'),
    pki,
    measurement: Buffer.from(MEASUREMENT, 'hex'),
  }).start();
  const logFile = join(o.dir, 'tee-operator.log');
  let child: ChildProcess | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      if (child?.pid && child.exitCode === null) {
        const gone = new Promise((r) => child!.once('exit', r));
        process.kill(-child.pid, 'SIGTERM');
        await gone;
      }
      await fw.stop();
    })();
    return stopped;
  };
  let kept = false;
  try {
    const serviceId = await newTeeService(o.devnet);
    say(`TEE-instance service ${serviceId} (tee_type 3, SEV) served by operator1; log: ${logFile}`);
    say(
      '$ OPERATOR_MODE=tee-instance TEE_BACKEND=direct TEE_DIRECT_TYPE=sev TEE_TSM_REPORT_ROOT=… agent-sandbox-operator run',
    );
    const op = await startTeeOperator(o, serviceId, logFile);
    child = op.child;
    say(`provisioned and reported on chain; operator API ${op.url}`);
    const target = [
      '--operator',
      op.url,
      '--rpc',
      o.devnet.rpcUrl,
      '--blueprint',
      o.devnet.contracts.teeInstance,
      '--service',
      `${serviceId}`,
    ];
    const pin = ['--measurement', MEASUREMENT, '--test-anchors', join(o.dir, 'pki')];
    const env = {
      AGENT_SANDBOX_TEST_MODE: 'true',
      AGENT_SANDBOX_PRIVATE_KEY: o.devnet.accounts.serviceOwner.privateKey,
    };
    const v = await must(cli(['tee', 'verify', '--json', ...target, ...pin], { env }), 'tee verify');
    const sandboxId = (JSON.parse(v.stdout) as { sandbox_id: string }).sandbox_id;
    const secret = `demo-${randomBytes(4).toString('hex')}`;
    await must(
      cli(['secrets', 'set', sandboxId, 'DEMO_TEE_SECRET', '--sealed', ...target, ...pin], {
        env: { ...env, DEMO_TEE_SECRET: secret },
      }),
      'secrets set --sealed',
    );
    const e = await must(
      // Over the enclave's owner channel: the operator API refuses a TEE sandbox's exec.
      cli(['exec', sandboxId, '--tee', ...target, ...pin, '--', 'printenv DEMO_TEE_SECRET'], { env }),
      'exec',
    );
    kept = o.keep === true;
    return { sandboxId, secretSeen: e.stdout.trim() === secret, serviceId, url: op.url, stop };
  } finally {
    if (!kept) await stop();
  }
}
