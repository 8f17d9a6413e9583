// The CLI's on-chain commands (create, delete) on the shared devnet, in-process: usage and chain
// exit codes, and create/delete end to end with the operator's side played by its real key.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PassThrough } from 'node:stream';
import { iTangleAbi } from '@agent-sandbox/contracts';
import {
  createPublicClient,
  createWalletClient,
  decodeAbiParameters,
  encodeAbiParameters,
  type Hex,
  http,
  parseEventLogs,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { sandboxCreateRequestLayout } from '../job-io.ts';
import { runCliInProcess } from '../testing/cli-harness.ts';
import { type SpecOperator, startSpecOperator } from '../testing/spec-operator.ts';

const key = generatePrivateKey();
const owner = privateKeyToAccount(key);

let op: SpecOperator;
let configDir: string;
beforeEach(async () => {
  op = await startSpecOperator();
  op.sandboxes.set('sb-1', { id: 'sb-1', owner: owner.address.toLowerCase(), state: 'running', secrets: {} });
  op.sandboxes.set('sb-2', { id: 'sb-2', owner: owner.address.toLowerCase(), state: 'stopped', secrets: {} });
  configDir = await mkdtemp(join(tmpdir(), 'client-cli-'));
});
afterEach(async () => {
  await op.close();
  rmSync(configDir, { recursive: true, force: true });
});

function cli(
  argv: string[],
  opts: { env?: Record<string, string>; stdin?: PassThrough; abortAfterMs?: number } = {},
) {
  return runCliInProcess(argv, { configDir, ...opts });
}

const _withKey = () => ['--operator', op.url, '--private-key', key];

describe('on-chain commands', () => {
  const devnetFile = inject('devnetStateFile');

  it('create refuses bad flags and secret-looking env before touching the chain (exit 1)', async () => {
    expect((await cli(['create', '--devnet', devnetFile, '--tee', 'sgx'])).code).toBe(1);
    expect((await cli(['create', '--devnet', devnetFile, '--cpu', 'two'])).code).toBe(1);
    const r = await cli(['create', '--devnet', devnetFile, '--env', 'AWS_SECRET_ACCESS_KEY=x']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/looks like a secret.*secrets set/);
  });

  it('create names one source at most; branch needs the id (exit 1, before the chain)', async () => {
    const sbx = `sbx-${'ab'.repeat(16)}`;
    const snap = `sha256:${'cd'.repeat(32)}`;
    const both = await cli([
      'create',
      '--devnet',
      devnetFile,
      '--from-sandbox',
      sbx,
      '--from-snapshot',
      snap,
    ]);
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/name one source/);
    const also = await cli(['branch', sbx, '--devnet', devnetFile, '--from-snapshot', snap]);
    expect(also.code).toBe(1);
    expect((await cli(['branch', '--devnet', devnetFile])).code).toBe(1);
    const help = await cli(['branch', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/no secrets/i);
    expect(help.out).not.toMatch(/--image/);
  });

  it('needs rpc/tangle/service from flags or --devnet (exit 1)', async () => {
    const r = await cli(['delete', 'sb-1', '--private-key', key]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/on-chain jobs need --rpc, --tangle, --service/);
  });

  it('an unreachable RPC: exit 6', async () => {
    const r = await cli([
      'delete',
      'sb-1',
      '--private-key',
      key,
      '--rpc',
      'http://127.0.0.1:9',
      '--tangle',
      '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      '--service',
      '0',
    ]);
    expect(r.code).toBe(6);
  });

  it('delete of a sandbox the chain does not know: exit 6 naming the revert', async () => {
    const r = await cli(['delete', 'no-such-sandbox', '--devnet', devnetFile]);
    expect(r.code).toBe(6);
    expect(r.err).toMatch(/UnknownSandbox/);
  });
});

describe('create and delete through the CLI on the devnet', () => {
  const devnet = inject('devnet');
  const devnetFile = inject('devnetStateFile');
  const tangle = devnet.contracts.tangle as Hex;
  const serviceId = BigInt(devnet.services.cloud);
  const pub = createPublicClient({ transport: http(devnet.rpcUrl) });
  const user = devnet.accounts.user;
  const keyOf = (addr: string) =>
    Object.values(devnet.accounts).find((a) => a.address.toLowerCase() === addr.toLowerCase())!
      .privateKey as Hex;

  /**
   * Plays the operator for the one job whose inputs match `match`: waits for its JobSubmitted,
   * reports phases on the test API, and posts `output` with the assigned operator's real key.
   */
  async function actAsOperator(
    fromBlock: bigint,
    match: (job: number, inputs: Hex) => boolean,
    respond: (callId: bigint) => Hex,
  ): Promise<bigint> {
    for (let i = 0; i < 300; i++) {
      const logs = await pub.getContractEvents({
        address: tangle,
        abi: iTangleAbi,
        eventName: 'JobSubmitted',
        fromBlock,
      });
      const hit = logs.find((l) => l.args.serviceId === serviceId && match(l.args.jobIndex!, l.args.inputs!));
      if (hit) {
        const callId = hit.args.callId!;
        const receipt = await pub.getTransactionReceipt({ hash: hit.transactionHash! });
        const { agentSandboxBlueprintAbi } = await import('@agent-sandbox/contracts');
        const [assigned] = parseEventLogs({
          abi: agentSandboxBlueprintAbi,
          logs: receipt.logs,
          eventName: ['OperatorAssigned', 'OperatorRouted'],
        });
        const operator = assigned!.args.operator;
        op.provisions.set(String(callId), { phase: 'queued' });
        await new Promise((r) => setTimeout(r, 300));
        // Shorter than the CLI's poll: only the history the record keeps shows it.
        op.provisions.set(String(callId), {
          phase: 'ready',
          phases: [
            { phase: 'queued' },
            { phase: 'container_start' },
            { phase: 'health_check' },
            { phase: 'ready' },
          ],
        });
        const wallet = createWalletClient({
          account: privateKeyToAccount(keyOf(operator)),
          transport: http(devnet.rpcUrl),
        });
        const hash = await wallet.writeContract({
          address: tangle,
          abi: iTangleAbi,
          functionName: 'submitResult',
          args: [serviceId, callId, respond(callId)],
          chain: null,
        });
        await pub.waitForTransactionReceipt({ hash });
        return callId;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the job never appeared on chain');
  }

  it('branch <id> submits the create job with from_sandbox in capabilities_json, beside the other options', async () => {
    const name = `cli-branch-${Date.now()}`;
    const source = `sbx-${'ef'.repeat(16)}`;
    const id = `sbx-${'12'.repeat(16)}`;
    const fields = sandboxCreateRequestLayout().components.map((c) => c.name);
    let caps = '';
    const from = await pub.getBlockNumber();
    const actor = actAsOperator(
      from,
      (job, inputs) => {
        if (job !== 0) return false;
        const v = decodeAbiParameters(sandboxCreateRequestLayout().components, inputs);
        if (v[0] !== name) return false;
        caps = String(v[fields.indexOf('capabilities_json')]);
        return true;
      },
      () => {
        op.sandboxes.set(id, { id, owner: user.address.toLowerCase(), state: 'running', secrets: {} });
        return encodeAbiParameters(
          [{ type: 'tuple', components: [{ type: 'string' }, { type: 'string' }] }],
          [[id, JSON.stringify({ sandboxId: id, operatorApiUrl: op.url })]],
        );
      },
    );
    actor.catch(() => {});
    const r = await cli([
      'branch',
      source,
      '--devnet',
      devnetFile,
      '--operator',
      op.url,
      '--name',
      name,
      '--shape',
      'small',
      '--allow-domain',
      'github.com',
      '--allow-domain',
      '*.npmjs.org',
      '--runtime',
      'runsc',
      '--timeout',
      '60',
    ]);
    expect(r.code, r.err).toBe(0);
    await actor;
    expect(r.out).toBe(`${id}\n`);
    // --allow-domain alone is a strict policy (the create option's wire form).
    expect(JSON.parse(caps)).toEqual({
      shape: 'small',
      network: { mode: 'strict', allow_domains: ['github.com', '*.npmjs.org'] },
      runtime: 'runsc',
      from_sandbox: source,
    });
  });

  it('create prints progress and the id once running; get finds it again; delete removes it', async () => {
    const name = `cli-e2e-${Date.now()}`;
    const id = `sb-${name}`;
    const from = await pub.getBlockNumber();
    const actor = actAsOperator(
      from,
      (job, inputs) =>
        job === 0 && decodeAbiParameters(sandboxCreateRequestLayout().components, inputs)[0] === name,
      () => {
        op.sandboxes.set(id, { id, owner: user.address.toLowerCase(), state: 'running', secrets: {} });
        return encodeAbiParameters(
          [{ type: 'tuple', components: [{ type: 'string' }, { type: 'string' }] }],
          [[id, JSON.stringify({ sandboxId: id, operatorApiUrl: op.url })]],
        );
      },
    );
    actor.catch(() => {}); // awaited below, after the CLI's own verdict
    const created = await cli([
      'create',
      '--devnet',
      devnetFile,
      '--operator',
      op.url,
      '--name',
      name,
      '--timeout',
      '60',
    ]);
    expect(created.code, created.err).toBe(0);
    await actor;
    expect(created.out).toBe(`${id}\n`);
    expect(created.err).toMatch(/job submitted: call \d+/);
    expect(created.err).toMatch(/container_start[\s\S]*health_check[\s\S]*ready[\s\S]*running/);

    // The operator was remembered and the session cached: no --operator, no key needed.
    const got = await cli(['get', id, '--json']);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.out)).toMatchObject({ id, state: 'running' });

    // A machine that never saw the create finds the operator on chain: the blueprint's
    // getSandboxOperator, then the rpcAddress it registered. Nothing should listen there during
    // tests, but the ports are shared with anyone running a devnet operator, so either answer
    // (unreachable, or "not on this operator") proves the lookup.
    const elsewhere = await mkdtemp(join(tmpdir(), 'client-cli-other-'));
    try {
      const fresh = await runCliInProcess(['get', id, '--devnet', devnetFile], { configDir: elsewhere });
      expect([3, 5]).toContain(fresh.code);
      expect(fresh.err).toMatch(/http:\/\/127\.0\.0\.1:909[01]/);
      const unknown = await runCliInProcess(['get', 'sb-never-created', '--devnet', devnetFile], {
        configDir: elsewhere,
      });
      expect(unknown.code).toBe(3);
      expect(unknown.err).toMatch(/not active on chain/);
      // `list` asks every operator of the service and names each one it could not reach.
      const listed = await runCliInProcess(['list', '--devnet', devnetFile], { configDir: elsewhere });
      expect([0, 5]).toContain(listed.code);
      if (listed.code === 5) expect(listed.err).toMatch(/127\.0\.0\.1:909[01]/);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }

    const delFrom = await pub.getBlockNumber();
    const delActor = actAsOperator(
      delFrom,
      (job, inputs) => job === 1 && decodeAbiParameters([{ type: 'string' }], inputs)[0] === id,
      () => encodeAbiParameters([{ type: 'string' }], ['{"deleted":true}']),
    );
    delActor.catch(() => {});
    const del = await cli(['delete', id, '--devnet', devnetFile, '--timeout', '60']);
    expect(del.code, del.err).toBe(0);
    await delActor;
    expect(del).toMatchObject({ code: 0, out: `deleted ${id}\n` });
  });

  it('a failed provision: exit 5 naming the phase and the reason', async () => {
    const name = `cli-fail-${Date.now()}`;
    const from = await pub.getBlockNumber();
    const actor = actAsOperator(
      from,
      (job, inputs) =>
        job === 0 && decodeAbiParameters(sandboxCreateRequestLayout().components, inputs)[0] === name,
      () =>
        encodeAbiParameters(
          [{ type: 'tuple', components: [{ type: 'string' }, { type: 'string' }] }],
          [['', JSON.stringify({ error: 'image agent:nope not found', phase: 'image_pull' })]],
        ),
    );
    actor.catch(() => {});
    const r = await cli([
      'create',
      '--devnet',
      devnetFile,
      '--operator',
      'http://127.0.0.1:9',
      '--name',
      name,
    ]);
    expect(r.code, r.err).toBe(5);
    await actor;
    expect(r.err).toMatch(/provisioning failed at image_pull: image agent:nope not found/);
  });
});
