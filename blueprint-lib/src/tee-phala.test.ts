// tee-instance mode on TEE_BACKEND=phala, on the devnet: the instance sandbox is deployed as a
// CVM through a local fake of the Phala Cloud API (its "CVM" a real sidecar process with a dstack
// agent socket in the real sample's shape), never as a local container; reportProvisioned carries
// the v1 document made from the CVM's own quote over the on-chain nonce, and the contract keeps
// its hash. No real CVM or Phala account was reached.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBinding, fromHex, onChainNonce, parseAttestationDoc } from '@agent-sandbox/attestation';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { FAKE_PHALA_API_KEY, type FakePhala, startFakePhala } from '@agent-sandbox/runtime/testing';
import { type FakeDstack, startFakeDstack } from '@agent-sandbox/sidecar/testing';
import pino from 'pino';
import { decodeFunctionData, encodeAbiParameters, keccak256, toHex as viemHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SandboxRuntime } from './deps.ts';
import { provisionInstance, teeContextFor } from './instance.ts';
import { SANDBOX_CREATE_INPUT } from './jobs.ts';
import { openTeeInstance } from './tee.ts';
import { DevnetJobs } from './testing/devnet-service.ts';

const devnet = inject('devnet');
let dir: string;
let dstack: FakeDstack;
let phala: FakePhala;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tee-phala-'));
  dstack = await startFakeDstack(join(dir, 'dstack.sock'));
  phala = await startFakePhala({ dstackSocket: dstack.socketPath, bootPolls: 2 });
});
afterAll(async () => {
  await phala?.close();
  await dstack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const tdxConfig = encodeAbiParameters(
  [{ type: 'tuple', components: SANDBOX_CREATE_INPUT }],
  [
    {
      name: 'tee-phala',
      image: '',
      stack: '',
      agent_identifier: '',
      env_json: '{"MODE":"phala"}',
      metadata_json: '{}',
      ssh_enabled: false,
      ssh_public_key: '',
      web_terminal_enabled: false,
      max_lifetime_seconds: 600n,
      idle_timeout_seconds: 300n,
      cpu_cores: 1n,
      memory_mb: 256n,
      disk_gb: 1n,
      tee_required: true,
      tee_type: 1,
      attestation_nonce: '',
      capabilities_json: '',
    },
  ],
);

/** No local engine in phala mode: any call to it is a defect. */
const noLocalSandboxes = new Proxy({} as SandboxRuntime, {
  get: (_t, name) => () => {
    throw new Error(`phala mode must not create local sandboxes (called ${String(name)})`);
  },
});

describe('tee-instance on TEE_BACKEND=phala', () => {
  it('deploys the instance as a CVM and reports the v1 document from its quote on chain', async () => {
    const jobs = new DevnetJobs(devnet);
    const serviceId = await jobs.newService('teeInstance', tdxConfig);
    const account = privateKeyToAccount(devnet.accounts.operator1.privateKey);
    const tee = await openTeeInstance({
      settings: {
        backend: 'phala',
        tsmRoot: '/nonexistent',
        pccsUrl: 'http://127.0.0.1:1',
        testMode: false,
        phala: {
          apiKey: FAKE_PHALA_API_KEY,
          endpoint: phala.endpoint,
          image: `reg.example/sandbox@sha256:${'f'.repeat(64)}`,
          pollMs: 10,
        },
      },
      chainId: BigInt(devnet.chainId),
      serviceId,
      owner: devnet.accounts.serviceOwner.address,
      operator: account.address,
      injectSecrets: () => {
        throw new Error('secrets must stay in the CVM');
      },
      sidecarFor: () => {
        throw new Error('phala: the CVM sidecar is reached through the backend');
      },
      expectedMeasurements: [],
      requirePinned: true,
      acceptedTcbStatuses: ['UpToDate'],
    });
    expect(tee.capabilities).toMatchObject({ backend: 'phala', type: 'tdx', bindsNonce: true });
    const r = await provisionInstance({
      mode: 'tee-instance',
      httpRpcUrl: devnet.rpcUrl,
      blueprint: devnet.contracts.teeInstance,
      serviceId,
      account,
      sandboxes: noLocalSandboxes,
      policy: {
        defaultImage: 'unused-locally',
        imageAllowlist: [],
        shapes: {
          presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
          defaultPreset: 'default',
          ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
        },
        teeAvailable: true,
      },
      operatorApiUrl: 'http://127.0.0.1:9193',
      log: pino({ level: 'silent' }),
      tee: tee.instance,
    });
    expect(phala.cvm()).toBeDefined();
    // The service owner gives the CVM orders (over the owner channel); the create env is not
    // delivered by the operator (in a CVM only the owner sets env).
    const ownerAcct = privateKeyToAccount(devnet.accounts.serviceOwner.privateKey);
    expect(await phala.inCvm('echo "[$MODE]"', ownerAcct)).toEqual({ stdout: '[]\n', status: 200 });
    // The operator itself, with its own wallet, is not the owner.
    expect((await phala.inCvm('id', account)).status).toBe(403);

    const tx = await jobs.pub.getTransaction({ hash: r.reportTx! });
    const json = (
      decodeFunctionData({ abi: agentSandboxBlueprintAbi, data: tx.input }).args as readonly unknown[]
    )[4] as string;
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
    expect(doc).toMatchObject({ v: 1, tee: 'tdx', binding: { ctx } });
    // The quote the CVM's agent made carries the binding over the key only the CVM holds.
    const signedPosition = fromHex(doc.evidence).subarray(568, 632);
    checkBinding(
      signedPosition,
      ctx,
      fromHex(doc.binding.pubkey),
      onChainNonce(devnet.chainId, serviceId, account.address),
    );
    expect(() =>
      checkBinding(
        signedPosition,
        ctx,
        fromHex(doc.binding.pubkey),
        onChainNonce(devnet.chainId, serviceId, devnet.accounts.operator2.address),
      ),
    ).toThrow(/does not commit/);
  });
});
