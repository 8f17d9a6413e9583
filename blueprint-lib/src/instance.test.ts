// Instance mode on the devnet and Docker: a fresh instance service whose config is a create
// request; the operator provisions it once, reports it on chain once. tee-instance is refused
// without a TEE backend, and with one (direct, over a test configfs-tsm tree) the report carries
// a v1 attestation document whose hash the contract keeps and which verifies bound to this
// chain, service and operator.
import { join } from 'node:path';
import {
  docAsAttestation,
  onChainNonce,
  parseAttestationDoc,
  toHex,
  verifyBoundAttestation,
} from '@agent-sandbox/attestation';
import { createSevTestPki, saveSevTestPki } from '@agent-sandbox/attestation/testing';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import type { SandboxManager } from '@agent-sandbox/runtime';
import { FakeTsmFirmware } from '@agent-sandbox/runtime/testing';
import pino from 'pino';
import { encodeAbiParameters, keccak256, toHex as viemHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { instanceCallId, provisionInstance, teeContextFor } from './instance.ts';
import { SANDBOX_CREATE_INPUT } from './jobs.ts';
import { openTeeInstance } from './tee.ts';
import { DevnetJobs } from './testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from './testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blinst-${Date.now().toString(36)}`;
let rt: TestRuntime;
let dir: string;
let manager: SandboxManager;
const policy = {
  defaultImage: image,
  imageAllowlist: [],
  shapes: {
    presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
    defaultPreset: 'default',
    ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
  },
  teeAvailable: false,
};

beforeAll(async () => {
  rt = await openTestRuntime({ operatorId: RUN, image, secret: '34'.repeat(32) });
  ({ dir, manager } = rt);
});
afterAll(() => rt?.close());

// Tuple-encoded (abi.encode(struct)), as the Rust SDK would send it.
const instanceConfig = (tee = 0) =>
  encodeAbiParameters(
    [{ type: 'tuple', components: SANDBOX_CREATE_INPUT }],
    [
      {
        name: 'inst',
        image: '',
        stack: '',
        agent_identifier: '',
        env_json: '{"MODE":"instance"}',
        metadata_json: '{}',
        ssh_enabled: false,
        ssh_public_key: '',
        web_terminal_enabled: false,
        max_lifetime_seconds: 600n,
        idle_timeout_seconds: 300n,
        cpu_cores: 1n,
        memory_mb: 256n,
        disk_gb: 1n,
        tee_required: tee !== 0,
        tee_type: tee,
        attestation_nonce: '',
        capabilities_json: '',
      },
    ],
  );

describe('instance mode', () => {
  it('provisions the service config once and reports it on chain once', async () => {
    const jobs = new DevnetJobs(devnet);
    const config = instanceConfig();
    const serviceId = await jobs.newService('instance', config);
    const account = privateKeyToAccount(devnet.accounts.operator1.privateKey);
    const opts = {
      mode: 'instance' as const,
      httpRpcUrl: devnet.rpcUrl,
      blueprint: devnet.contracts.instance,
      serviceId,
      account,
      sandboxes: manager,
      policy,
      operatorApiUrl: 'http://127.0.0.1:9191',
      log: pino({ level: 'silent' }),
    };
    const first = await provisionInstance(opts);
    expect(first.sandbox.state).toBe('running');
    expect(first.sandbox.owner.toLowerCase()).toBe(devnet.accounts.serviceOwner.address.toLowerCase());
    expect(first.sandbox.callId).toBe(instanceCallId(serviceId));
    expect(first.reportTx).toMatch(/^0x/);
    const [ops, urls] = await jobs.pub.readContract({
      address: devnet.contracts.instance,
      abi: agentSandboxBlueprintAbi,
      functionName: 'getOperatorEndpoints',
      args: [serviceId],
    });
    expect(ops.map((a) => a.toLowerCase())).toContain(account.address.toLowerCase());
    expect(urls).toContain('http://127.0.0.1:9191');

    const again = await provisionInstance(opts);
    expect(again.sandbox.id).toBe(first.sandbox.id);
    expect(again.reportTx).toBeUndefined();
    expect(manager.list()).toHaveLength(1);
  });

  it('refuses tee-instance on a host without a TEE backend, before creating anything', async () => {
    const before = manager.list().length;
    await expect(
      provisionInstance({
        mode: 'tee-instance',
        httpRpcUrl: devnet.rpcUrl,
        blueprint: devnet.contracts.teeInstance,
        serviceId: BigInt(devnet.services.teeInstance),
        account: privateKeyToAccount(devnet.accounts.operator1.privateKey),
        sandboxes: manager,
        policy,
        operatorApiUrl: 'http://127.0.0.1:9191',
        log: pino({ level: 'silent' }),
      }),
    ).rejects.toMatchObject({ code: 'TEE_UNAVAILABLE' });
    expect(manager.list()).toHaveLength(before);
  });

  it('tee-instance on the direct backend: reports a v1 document the client verifies against the chain', async () => {
    const jobs = new DevnetJobs(devnet);
    const serviceId = await jobs.newService('teeInstance', instanceConfig(3));
    const account = privateKeyToAccount(devnet.accounts.operator2.privateKey);
    const pki = await createSevTestPki();
    await saveSevTestPki(join(dir, 'pki'), pki);
    const fw = await new FakeTsmFirmware({ root: join(dir, 'tsm'), pki }).start();
    try {
      const tee = await openTeeInstance({
        settings: {
          backend: 'direct',
          directType: 'sev',
          tsmRoot: join(dir, 'tsm'),
          pccsUrl: 'http://127.0.0.1:1',
          testAnchorsDir: join(dir, 'pki'),
          testMode: true,
        },
        chainId: BigInt(devnet.chainId),
        serviceId,
        owner: devnet.accounts.serviceOwner.address,
        operator: account.address,
        injectSecrets: (id, env) => manager.injectSecrets(id, env),
        sidecarFor: (id) => manager.sidecarEndpoint(id),
        expectedMeasurements: [],
        requirePinned: false,
        acceptedTcbStatuses: ['UpToDate'],
      });
      const r = await provisionInstance({
        mode: 'tee-instance',
        httpRpcUrl: devnet.rpcUrl,
        blueprint: devnet.contracts.teeInstance,
        serviceId,
        account,
        sandboxes: manager,
        policy: { ...policy, teeAvailable: true },
        operatorApiUrl: 'http://127.0.0.1:9192',
        log: pino({ level: 'silent' }),
        tee: tee.instance,
      });
      const tx = await jobs.pub.getTransaction({ hash: r.reportTx! });
      const { decodeFunctionData } = await import('viem');
      const call = decodeFunctionData({ abi: agentSandboxBlueprintAbi, data: tx.input });
      const json = (call.args as readonly unknown[])[4] as string;
      const stored = await jobs.pub.readContract({
        address: devnet.contracts.teeInstance,
        abi: agentSandboxBlueprintAbi,
        functionName: 'getAttestationHash',
        args: [serviceId, account.address],
      });
      expect(stored).toBe(keccak256(viemHex(json)));
      const doc = parseAttestationDoc(json);
      const ctx = teeContextFor(
        BigInt(devnet.chainId),
        serviceId,
        account.address,
        devnet.accounts.serviceOwner.address,
      )(r.sandbox.id);
      expect(doc.binding.ctx).toBe(ctx);
      // collateral (the VCEK) is off chain: the client takes it from the API's evidence
      const live = await tee.service.attestation(r.sandbox.id, toHex(new Uint8Array(32).fill(7)));
      const anchors = { sev: { ark: pki.arkPem, ask: pki.askPem }, nitroRoot: pki.arkPem };
      const check = (nonce: Uint8Array, c = ctx) =>
        verifyBoundAttestation(docAsAttestation(doc, live.collateral), {
          nowMs: Date.now(),
          anchors,
          expect: { ctx: c, nonce },
          allowList: [{ measurement: doc.measurements['measurement']! }],
        }).verification.verdict;
      expect(check(onChainNonce(devnet.chainId, serviceId, account.address))).toBe('verified');
      // the same document claimed for another operator or service does not verify
      expect(check(onChainNonce(devnet.chainId, serviceId, devnet.accounts.operator1.address))).toBe(
        'unverified',
      );
      expect(check(onChainNonce(devnet.chainId, serviceId + 1n, account.address))).toBe('unverified');
    } finally {
      await fw.stop();
    }
  });
});
