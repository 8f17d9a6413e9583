// The agent-sandbox-operator program as a user runs it: help, one config error listing every
// problem, keys that never print the private key, registration with capacity on the devnet, status.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { agentSandboxBlueprintAbi, localStakingAbi } from '@agent-sandbox/contracts';
import { EncryptedStore } from '@agent-sandbox/runtime';
import { createPublicClient, createWalletClient, erc20Abi, http, parseEther, zeroAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '..', 'bin', 'agent-sandbox-operator.mjs');
const devnet = inject('devnet');

function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/tmp',
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => res({ code, stdout, stderr }));
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'operator-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('agent-sandbox-operator', () => {
  it('prints help for the program and each subcommand', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const c of ['run', 'register', 'keys', 'devnet', 'status']) expect(top.stdout).toContain(c);
    const cmds = ['run', 'register', 'keys', 'devnet', 'status'];
    const helps = await Promise.all(cmds.map((c) => cli([c, '--help'])));
    helps.forEach((r, i) => {
      expect(r.code, cmds[i]).toBe(0);
      expect(r.stdout, cmds[i]).toContain(`agent-sandbox-operator ${cmds[i]}`);
    });
    const bad = await cli(['frobnicate']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown command');
  }, 180_000);

  it('run refuses an invalid configuration with one error listing every problem (exit 2)', async () => {
    const r = await cli(['run'], { OPERATOR_API_PORT: 'ninety', SESSION_AUTH_SECRET: 'not-hex-at-all' });
    expect(r.code).toBe(2);
    for (const v of [
      'HTTP_RPC_URL',
      'TANGLE_CONTRACT',
      'BLUEPRINT_ID',
      'SERVICE_ID',
      'DATA_DIR',
      'SESSION_AUTH_SECRET',
      'OPERATOR_API_PORT',
    ]) {
      expect(r.stderr, v).toContain(v);
    }
    expect(r.stderr).not.toContain('not-hex-at-all');
    expect(r.stderr.match(/The operator configuration is invalid/g)).toHaveLength(1);
  }, 120_000);

  it('keys: create and show print the address and public key, never the private key', async () => {
    const ks = join(dir, 'keystore');
    const noPw = await cli(['keys', 'create'], { KEYSTORE_URI: ks });
    expect(noPw.code).toBe(2);
    expect(noPw.stderr).toContain('KEYSTORE_PASSWORD');

    const created = await cli(['keys', 'create'], { KEYSTORE_URI: ks, TEST_MODE: 'true' });
    expect(created.code, created.stderr).toBe(0);
    const c = JSON.parse(created.stdout) as { address: string; publicKey: string; created: string };
    const priv = (await readFile(c.created, 'utf8')).trim().replace(/^0x/, '');
    expect(priv).toMatch(/^[0-9a-f]{64}$/);
    expect(privateKeyToAccount(`0x${priv}`).address).toBe(c.address);
    expect(created.stdout + created.stderr).not.toContain(priv);

    const shown = await cli(['keys', 'show'], { KEYSTORE_URI: ks, TEST_MODE: 'true' });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ address: c.address, publicKey: c.publicKey });
    expect(shown.stdout + shown.stderr).not.toContain(priv);

    const again = await cli(['keys', 'create'], { KEYSTORE_URI: ks, TEST_MODE: 'true' });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('refusing to overwrite');

    const encDir = join(dir, 'enc');
    const enc = await cli(['keys', 'create'], { KEYSTORE_URI: encDir, KEYSTORE_PASSWORD: 'correct horse' });
    expect(enc.code, enc.stderr).toBe(0);
    const encShown = await cli(['keys', 'show'], {
      KEYSTORE_URI: encDir,
      KEYSTORE_PASSWORD: 'correct horse',
    });
    expect(JSON.parse(encShown.stdout)).toMatchObject({
      kind: 'encrypted',
      address: JSON.parse(enc.stdout).address,
    });
  }, 300_000);

  it('register declares the capacity on chain and is idempotent (after staking: refused before, saying how)', async () => {
    const pk = generatePrivateKey();
    const acct = privateKeyToAccount(pk);
    const pub = createPublicClient({ transport: http(devnet.rpcUrl) });
    await pub.request({
      method: 'anvil_setBalance' as never,
      params: [acct.address, `0x${parseEther('10').toString(16)}`] as never,
    });
    const ks = join(dir, 'reg-key');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(ks, `${pk}\n`, { mode: 0o600 });
    const env = {
      HTTP_RPC_URL: devnet.rpcUrl,
      TANGLE_CONTRACT: devnet.contracts.tangle,
      STAKING_CONTRACT: devnet.contracts.staking!,
      BLUEPRINT_ID: `${devnet.blueprints.cloud}`,
      DATA_DIR: join(dir, 'reg-data'),
      KEYSTORE_URI: ks,
      TEST_MODE: 'true',
    };
    // Tangle registers only active operators of its staking contract, as tnt-core 0.19 does.
    const unstaked = await cli(['register', '--capacity', '3', '--rpc-address', 'http://127.0.0.1:1'], env);
    expect(unstaked.code).toBe(1);
    expect(unstaked.stderr).toMatch(/OperatorNotActive/);
    expect(unstaked.stderr).toMatch(/To fix: agent-sandbox-operator stake --amount N/);
    // The devnet bonds in an ERC20 (as tnt-core's LocalTestnet bonds in TNT): the deployer hands
    // the fresh operator its bond.
    const bond = await pub.readContract({
      address: devnet.contracts.staking!,
      abi: localStakingAbi,
      functionName: 'operatorBondToken',
    });
    if (bond !== zeroAddress) {
      const hash = await createWalletClient({
        account: privateKeyToAccount(devnet.accounts.deployer.privateKey),
        transport: http(devnet.rpcUrl),
      }).writeContract({
        address: bond,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [acct.address, parseEther('1')],
        chain: null,
      });
      await pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    }
    const staked = await cli(['stake', '--amount', '1', '--json'], env);
    expect(staked.code, staked.stderr).toBe(0);
    const first = await cli(['register', '--capacity', '3', '--rpc-address', 'http://127.0.0.1:1'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      status: 'registered',
      operator: acct.address,
      capacity: 3,
    });
    const cap = await pub.readContract({
      address: devnet.contracts.cloud,
      abi: agentSandboxBlueprintAbi,
      functionName: 'capacityOf',
      args: [acct.address],
    });
    expect(cap).toBe(3);
    const second = await cli(['register', '--capacity', '3'], env);
    expect(JSON.parse(second.stdout)).toMatchObject({ status: 'already-registered' });
  }, 180_000);

  it('status falls back to the local store summary when the API does not answer', async () => {
    const dataDir = join(dir, 'status-data');
    const secret = '12'.repeat(32);
    const store = await EncryptedStore.open({ dir: join(dataDir, 'store'), secret });
    await store.collection('handled-calls').put('0:1', { job: 0, outcome: 'skip', at: 1 });
    await store.close();
    const r = await cli(['status', '--url', 'http://127.0.0.1:1'], {
      DATA_DIR: dataDir,
      SESSION_AUTH_SECRET: secret,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('does not answer');
    expect(JSON.parse(r.stdout)).toMatchObject({ dataDir, handledCalls: 1, workflows: 0, sandboxes: {} });
    const local = await cli(['status', '--local'], { DATA_DIR: dataDir, SESSION_AUTH_SECRET: secret });
    expect(local.code).toBe(0);
  }, 180_000);
});
