// The role tools on the shared devnet (real anvil, LocalTangle, LocalStaking): an operator stakes,
// registers, sees, approves or rejects service requests (by hand or by its policy) and leaves; a
// user requests, waits for and terminates an instance service; a developer deploys a blueprint.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APPROVAL_OFF, decideApproval, startAutoApprover } from '@agent-sandbox/blueprint-lib/definition';
import { iTangleAbi } from '@agent-sandbox/contracts';
import { DEVNET_MNEMONIC } from '@agent-sandbox/devnet';
import {
  approveServiceRequest,
  type ChainContext,
  isSdkError,
  listServiceRequests,
  OperatorKey,
  register,
  rejectServiceRequest,
  stakeOperator,
  stakeStatus,
  unregisterOperator,
} from '@agent-sandbox/sdk';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  erc20Abi,
  http,
  parseEther,
  toHex,
  zeroAddress,
} from 'viem';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';

const devnet = inject('devnet');
const staking = devnet.contracts.staking as Address;
const tangle = devnet.contracts.tangle;
const pub = createPublicClient({ transport: http(devnet.rpcUrl) });
const dir = mkdtempSync(join(tmpdir(), 'roles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh funded anvil account no devnet role uses (index 6+, per test file run). */
function freshKey(index: number) {
  const hd = mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: index });
  return toHex(hd.getHdKey().privateKey!);
}
const opKey = freshKey(6 + (process.pid % 40));
const op = privateKeyToAccount(opKey);
const opCtx: ChainContext = { rpcUrl: devnet.rpcUrl, account: op, pollingIntervalMs: 50 };
const instanceBlueprint = BigInt(devnet.blueprints.instance);

const client = (args: string[], account = devnet.accounts.user.privateKey) =>
  runCliInProcess([...args, '--rpc', devnet.rpcUrl, '--tangle', tangle, '--json'], {
    configDir: join(dir, 'cli'),
    env: { AGENT_SANDBOX_PRIVATE_KEY: account },
  });

/** The operator program itself (a child process), with this test's operator key. */
function operatorCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const keyFile = join(dir, 'operator-ecdsa.key');
  writeFileSync(keyFile, `${opKey}\n`, { mode: 0o600 });
  return new Promise((res) =>
    execFile(
      process.execPath,
      [join(import.meta.dirname, '../../blueprint-bin/bin/agent-sandbox-operator.mjs'), ...args],
      {
        env: {
          ...process.env,
          HTTP_RPC_URL: devnet.rpcUrl,
          TANGLE_CONTRACT: tangle,
          STAKING_CONTRACT: staking,
          BLUEPRINT_ID: `${instanceBlueprint}`,
          KEYSTORE_URI: keyFile,
          TEST_MODE: 'true',
        },
        timeout: 120_000,
      },
      (e, out, err) => res({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

const requestArgs = (memory: string) => [
  'service',
  'request',
  '--blueprint-id',
  `${instanceBlueprint}`,
  '--operators',
  op.address,
  '--name',
  'roles-test',
  '--memory',
  memory,
  '--no-wait',
];

/** One raw JSON-RPC call to the devnet's anvil. */
async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
  const r = await fetch(devnet.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await r.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

describe('role tools on the devnet', () => {
  // A fresh account outside the devnet's funded roles gets gas money the way anvil gives it.
  beforeAll(async () => {
    await rpc('anvil_setBalance', [op.address, toHex(parseEther('100'))]);
  });
  let approvedService: bigint | undefined;

  it('stake: below the minimum (or without the bond token) is refused by name; then the operator is active', {
    timeout: 120_000,
  }, async () => {
    const { bondToken, minOperatorStake } = await stakeStatus(opCtx, staking, op.address);
    if (minOperatorStake > 1n) {
      await expect(stakeOperator(opCtx, staking, 1n)).rejects.toSatisfy(
        (e) => isSdkError(e, 'TX') && /minOperatorStake/.test((e as Error).message),
      );
    }
    if (bondToken !== zeroAddress) {
      // tnt-core's LocalTestnet (npm run test:real-tangle) bonds in TNT, with no minimum: a fresh
      // account has none, so the token refuses the transfer, by its own error's name.
      await expect(stakeOperator(opCtx, staking, parseEther('1'))).rejects.toSatisfy(
        (e) => isSdkError(e, 'TX') && /ERC20InsufficientBalance/.test((e as Error).message),
      );
      const deployer = createWalletClient({
        account: privateKeyToAccount(devnet.accounts.deployer.privateKey),
        transport: http(devnet.rpcUrl),
      });
      const hash = await deployer.writeContract({
        address: bondToken,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [op.address, parseEther('1')],
        chain: null,
      });
      await pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    }
    const r = await operatorCli(['stake', '--amount', '1', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ action: 'registered', active: true });
    expect((await stakeStatus(opCtx, staking, op.address)).stake).toBe(parseEther('1'));
  });

  it('register with capacity, then a request nobody approved never activates', {
    timeout: 180_000,
  }, async () => {
    await register({
      httpRpcUrl: devnet.rpcUrl,
      tangle,
      blueprintId: instanceBlueprint,
      key: new OperatorKey(op, 'dev', 'test'),
      rpcAddress: 'http://127.0.0.1:1',
      registrationInputs: encodeAbiParameters([{ type: 'uint32' }], [5]),
    });
    const sent = await client(requestArgs('512'));
    expect(sent.code, sent.err).toBe(0);
    const { requestId } = JSON.parse(sent.out) as { requestId: string };
    const waited = await client(['service', 'wait', requestId, '--timeout', '2']);
    expect(waited.code, waited.err).toBe(5); // still pending: nobody approved
    expect(waited.err).toMatch(/still pending \(0 of 1 approvals\)/);
    // Blocks go on after the request (a real chain never stops at it): the list still shows it.
    await rpc('evm_mine');
    const listed = await operatorCli(['requests', 'list', '--json']);
    expect(listed.code, listed.err).toBe(0);
    const mine = (JSON.parse(listed.out) as { requests: Array<{ requestId: string; state: string }> })
      .requests;
    expect(mine).toContainEqual(expect.objectContaining({ requestId, state: 'pending' }));
    expect(
      await pub.readContract({ address: tangle, abi: iTangleAbi, functionName: 'serviceCount' }),
    ).toBeGreaterThan(0n);

    // The policy: off by default; on, outside the memory limit it leaves the request alone …
    const [q] = await listServiceRequests(opCtx, tangle, {
      blueprintId: instanceBlueprint,
      operator: op.address,
      states: ['pending'],
    });
    expect(decideApproval(q!, APPROVAL_OFF, true).approve).toBe(false);
    const log = { info: () => {}, warn: () => {} };
    const limits = { ...APPROVAL_OFF, enabled: true, maxMemoryMb: 256 };
    const strict = startAutoApprover({
      ctx: opCtx,
      tangle,
      blueprintId: instanceBlueprint,
      operator: op.address,
      instance: true,
      limits,
      intervalMs: 60_000,
      log,
    });
    await strict.stop();
    await strict.tick();
    const still = await listServiceRequests(opCtx, tangle, {
      blueprintId: instanceBlueprint,
      operator: op.address,
      states: ['pending'],
    });
    expect(still.map((x) => `${x.requestId}`)).toContain(requestId);
    expect(decideApproval(still[0]!, limits, true).reasons).toEqual(['memory_mb 512 exceeds 256']);

    // … within the limits it approves, and the (single-operator) service activates.
    const loose = startAutoApprover({
      ctx: opCtx,
      tangle,
      blueprintId: instanceBlueprint,
      operator: op.address,
      instance: true,
      limits: { ...limits, maxMemoryMb: 1024 },
      intervalMs: 60_000,
      log,
    });
    await loose.stop();
    await loose.tick();
    const done = await client(['service', 'wait', requestId, '--timeout', '30']);
    expect(done.code, done.err).toBe(0);
    approvedService = BigInt((JSON.parse(done.out) as { serviceId: string }).serviceId);
    expect(
      await pub.readContract({
        address: tangle,
        abi: iTangleAbi,
        functionName: 'isServiceActive',
        args: [approvedService],
      }),
    ).toBe(true);
  });

  it('reject: the user is told by name and exit 6', async () => {
    const sent = await client(requestArgs('512'));
    const { requestId } = JSON.parse(sent.out) as { requestId: string };
    await rejectServiceRequest(opCtx, tangle, BigInt(requestId));
    const waited = await client(['service', 'wait', requestId, '--timeout', '10']);
    expect(waited.code).toBe(6);
    expect(waited.err).toMatch(/was rejected by/);
  });

  it('terminate by its owner; then the operator may leave the blueprint', { timeout: 120_000 }, async () => {
    expect(approvedService).toBeDefined();
    // The operator may not leave while it serves an active service.
    await expect(unregisterOperator(opCtx, tangle, instanceBlueprint)).rejects.toThrow(
      /OperatorHasActiveServices/,
    );
    const other = await client(
      ['service', 'terminate', `${approvedService}`],
      devnet.accounts.serviceOwner.privateKey,
    );
    expect(other.code).toBe(6); // not the owner
    expect(other.err).toMatch(/NotServiceOwner/);
    const t = await client(['service', 'terminate', `${approvedService}`]);
    expect(t.code, t.err).toBe(0);
    expect(
      await pub.readContract({
        address: tangle,
        abi: iTangleAbi,
        functionName: 'isServiceActive',
        args: [approvedService!],
      }),
    ).toBe(false);
    const left = await operatorCli(['unregister', '--json']);
    expect(left.code, left.err).toBe(0);
    expect(
      await pub.readContract({
        address: tangle,
        abi: iTangleAbi,
        functionName: 'isOperatorRegistered',
        args: [instanceBlueprint, op.address],
      }),
    ).toBe(false);
  });

  it('service request --mode cloud: a fleet service of two operators, no sandbox config; sandbox flags refused', {
    timeout: 120_000,
  }, async () => {
    const fleet = [devnet.accounts.operator1.address, devnet.accounts.operator2.address];
    const base = ['service', 'request', '--mode', 'cloud', '--blueprint-id', `${devnet.blueprints.cloud}`];
    const flags = await client([...base, '--operators', fleet.join(','), '--memory', '512', '--no-wait']);
    expect(flags.code).toBe(1); // usage
    expect(flags.err).toMatch(/a cloud service takes no sandbox request \(--memory\)/);
    const sent = await client([...base, '--operators', fleet.join(','), '--no-wait']);
    expect(sent.code, sent.err).toBe(0);
    const { requestId } = JSON.parse(sent.out) as { requestId: string };
    const [q] = (
      await listServiceRequests(opCtx, tangle, {
        blueprintId: BigInt(devnet.blueprints.cloud),
        operator: devnet.accounts.operator1.address,
        states: ['pending'],
      })
    ).filter((r) => `${r.requestId}` === requestId);
    expect(q?.call?.config).toBe('0x');
    for (const role of ['operator1', 'operator2'] as const) {
      const ctx = { rpcUrl: devnet.rpcUrl, account: privateKeyToAccount(devnet.accounts[role].privateKey) };
      await approveServiceRequest(ctx, tangle, BigInt(requestId));
    }
    const done = await client(['service', 'wait', requestId, '--timeout', '30']);
    expect(done.code, done.err).toBe(0);
    const serviceId = BigInt((JSON.parse(done.out) as { serviceId: string }).serviceId);
    const ops = await pub.readContract({
      address: tangle,
      abi: iTangleAbi,
      functionName: 'getServiceOperators',
      args: [serviceId],
    });
    expect(ops.map((a) => a.toLowerCase()).sort()).toEqual(fleet.map((a) => a.toLowerCase()).sort());
  });

  it('deploy-blueprint: a manager and a blueprint with the full definition; bad flags exit 2', {
    timeout: 180_000,
  }, async () => {
    const bad = await operatorCli(['deploy-blueprint', '--image', 'x/y:z', '--image-sha256', 'nothex']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--image-sha256/);
    const r = await operatorCli([
      'deploy-blueprint',
      '--modes',
      'cloud',
      '--image',
      'ghcr.io/example/agent-sandbox:1.0',
      '--image-sha256',
      `sha256:${'ab'.repeat(32)}`,
      '--json',
    ]);
    expect(r.code, r.err).toBe(0);
    const out = JSON.parse(r.out) as { blueprints: Array<{ blueprintId: string; manager: Address }> };
    const b = await pub.readContract({
      address: tangle,
      abi: iTangleAbi,
      functionName: 'getBlueprint',
      args: [BigInt(out.blueprints[0]!.blueprintId)],
    });
    expect(b.manager.toLowerCase()).toBe(out.blueprints[0]!.manager.toLowerCase());
    expect(b.owner).toBe(op.address);
    expect(r.err).toMatch(/createBlueprint.*mined in block/);
  });
});
