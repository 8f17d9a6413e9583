// Instance mode on the devnet and Docker: a fresh instance service whose config is a create
// request; the operator provisions it once, reports it on chain once, and tee-instance is refused.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { EncryptedStore, SandboxManager } from '@agent-sandbox/runtime';
import pino from 'pino';
import { encodeAbiParameters } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SandboxRuntime } from './deps.ts';
import { instanceCallId, provisionInstance } from './instance.ts';
import { SANDBOX_CREATE_INPUT } from './jobs.ts';
import { DevnetJobs } from './testing/devnet-service.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blinst-${Date.now().toString(36)}`;
let dir: string;
let store: EncryptedStore;
let manager: SandboxManager;
const policy = {
  defaultImage: image,
  imageAllowlist: [],
  maxCpuCores: 2,
  maxMemoryMb: 2048,
  maxDiskGb: 10,
  teeAvailable: false,
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), `${RUN}-`));
  store = await EncryptedStore.open({ dir: join(dir, 'store'), secret: '34'.repeat(32) });
  manager = await SandboxManager.open({
    store,
    config: {
      operatorId: RUN,
      image,
      snapshotDir: join(dir, 'snap'),
      extraLabels: { 'agent-sandbox.test': '1' },
    },
  });
});
afterAll(async () => {
  for (const r of manager?.list() ?? []) await manager.delete(r.id).catch(() => {});
  await manager?.close();
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('instance mode', () => {
  it('provisions the service config once and reports it on chain once', async () => {
    const jobs = new DevnetJobs(devnet);
    // Tuple-encoded (abi.encode(struct)), as the Rust SDK would send it.
    const config = encodeAbiParameters(
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
          tee_required: false,
          tee_type: 0,
          attestation_nonce: '',
          capabilities_json: '',
        },
      ],
    );
    const serviceId = await jobs.newService('instance', config);
    const account = privateKeyToAccount(devnet.accounts.operator1.privateKey);
    const opts = {
      mode: 'instance' as const,
      httpRpcUrl: devnet.rpcUrl,
      blueprint: devnet.contracts.instance,
      serviceId,
      account,
      sandboxes: manager as unknown as SandboxRuntime,
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
        sandboxes: manager as unknown as SandboxRuntime,
        policy,
        operatorApiUrl: 'http://127.0.0.1:9191',
        log: pino({ level: 'silent' }),
      }),
    ).rejects.toMatchObject({ code: 'TEE_UNAVAILABLE' });
    expect(manager.list()).toHaveLength(before);
  });
});
