// The CLI in-process: exit codes a script can rely on, one-line errors, cached sessions that are
// never printed, streaming prompt output, Ctrl-C cancelling a run, the terminal, and on-chain
// commands against the shared devnet.
import { readFileSync, rmSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
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
import { type SpecOperator, startSpecOperator } from '../testing/spec-operator.ts';
import type { CliIO } from './context.ts';
import { main } from './main.ts';

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

interface Run {
  code: number;
  out: string;
  err: string;
}

function cli(
  argv: string[],
  opts: { env?: Record<string, string>; stdin?: PassThrough; abortAfterMs?: number } = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const ac = new AbortController();
  const io: CliIO = {
    stdout: { write: (s: string) => out.push(s) },
    stderr: { write: (s: string) => err.push(s) },
    stdin: opts.stdin ?? new PassThrough(),
    env: { AGENT_SANDBOX_CONFIG_DIR: configDir, ...opts.env },
    signal: ac.signal,
  };
  if (opts.abortAfterMs !== undefined) setTimeout(() => ac.abort(), opts.abortAfterMs);
  return main(argv, io).then((code): Run => ({ code, out: out.join(''), err: err.join('') }));
}

const withKey = () => ['--operator', op.url, '--private-key', key];

describe('help and usage', () => {
  it('--help exits 0 with usage on stdout; `help <cmd>` too', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Usage: agent-sandbox <command>');
    const h = await cli(['help', 'exec']);
    expect(h).toMatchObject({ code: 0 });
    expect(h.out).toContain('Usage: agent-sandbox exec');
    expect((await cli(['prompt', '--help'])).out).toContain('Ctrl-C cancels');
  });

  it('no command, an unknown command or flag: exit 1 with a one-line error', async () => {
    expect((await cli([])).code).toBe(1);
    const r = await cli(['frobnicate']);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/^agent-sandbox: unknown command "frobnicate".*\(code USAGE\)\n$/);
    expect((await cli(['list', '--bogus'])).code).toBe(1);
    expect((await cli(['help', 'bogus'])).code).toBe(1);
  });

  it('--json errors are one JSON object on stderr', async () => {
    const r = await cli(['list', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.err)).toMatchObject({ error: { code: 'USAGE', exit_code: 1 } });
  });
});

describe('sessions', () => {
  it('login caches the session 0600 and never prints the token unless asked', async () => {
    const r = await cli(['login', ...withKey()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`signed in to ${op.url} as ${owner.address}`);
    const file = join(configDir, 'sessions.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const [token] = [...op.tokens.keys()];
    expect(readFileSync(file, 'utf8')).toContain(token!);
    expect(r.out + r.err).not.toContain(token!);
    const shown = await cli(['login', ...withKey(), '--show-token', '--json']);
    const printed = JSON.parse(shown.out).token as string;
    expect(op.tokens.has(printed)).toBe(true);
  });

  it('later commands use the cached session without the key', async () => {
    await cli(['login', ...withKey()]);
    const r = await cli(['list', '--operator', op.url]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('sb-1\trunning');
    expect(op.log.filter((l) => l === 'POST /api/auth/session')).toHaveLength(1);
  });

  it('no key and no session: exit 2 telling to log in', async () => {
    const r = await cli(['list', '--operator', op.url]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/run `agent-sandbox login/);
  });

  it('a revoked cached session without a key: exit 2 with the request id', async () => {
    await cli(['login', ...withKey()]);
    op.tokens.clear();
    const r = await cli(['get', 'sb-1', '--operator', op.url]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/request_id req-/);
  });

  it('logout revokes and forgets the session', async () => {
    await cli(['login', ...withKey()]);
    expect((await cli(['logout', '--operator', op.url])).code).toBe(0);
    expect(op.tokens.size).toBe(0);
    expect((await cli(['list', '--operator', op.url])).code).toBe(2);
  });
});

describe('sandbox commands and exit codes', () => {
  it('get: 0 with the record, 3 for an unknown id', async () => {
    const r = await cli(['get', 'sb-1', ...withKey(), '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ id: 'sb-1', state: 'running' });
    const missing = await cli(['get', 'nope', ...withKey()]);
    expect(missing.code).toBe(3);
    expect(missing.err).toMatch(/sandbox nope does not exist/);
  });

  it('exec: output passes through; 4 on a stopped sandbox; 7 when the command fails', async () => {
    const ok = await cli(['exec', 'sb-1', ...withKey(), '--', 'echo', 'hi']);
    expect(ok).toMatchObject({ code: 0, out: 'ran: echo hi\n' });
    const stopped = await cli(['exec', 'sb-2', ...withKey(), '--', 'true']);
    expect(stopped.code).toBe(4);
    expect(stopped.err).toMatch(/sb-2 is stopped.*agent-sandbox resume sb-2/);
    const failed = await cli(['exec', 'sb-1', ...withKey(), '--', 'exit 3']);
    expect(failed.code).toBe(7);
    expect(failed.err).toContain('[exit 3]');
  });

  it("another owner's sandbox: exit 2", async () => {
    const r = await cli(['get', 'sb-1', '--operator', op.url, '--private-key', generatePrivateKey()]);
    expect(r.code).toBe(2);
  });

  it('an unreachable operator: exit 5 naming it', async () => {
    const r = await cli(['list', '--operator', 'http://127.0.0.1:9', '--private-key', key]);
    expect(r.code).toBe(5);
    expect(r.err).toContain('127.0.0.1:9');
  });

  it('secrets: set from K=V and from the environment, list names only, wipe', async () => {
    const set = await cli(['secrets', 'set', 'sb-1', 'A=1', 'OPENAI_API_KEY', ...withKey()], {
      env: { OPENAI_API_KEY: 'sk-very-secret' },
    });
    expect(set.code).toBe(0);
    expect(set.out + set.err).not.toContain('sk-very-secret');
    expect(op.sandboxes.get('sb-1')!.secrets).toEqual({ A: '1', OPENAI_API_KEY: 'sk-very-secret' });
    expect((await cli(['secrets', 'list', 'sb-1', ...withKey()])).out).toBe('A\nOPENAI_API_KEY\n');
    expect((await cli(['secrets', 'wipe', 'sb-1', ...withKey()])).code).toBe(0);
    expect((await cli(['secrets', 'set', 'sb-1', 'MISSING', ...withKey()])).code).toBe(1);
    expect((await cli(['secrets', 'shred', 'sb-1', ...withKey()])).code).toBe(1);
  });

  it('stop and resume', async () => {
    expect((await cli(['stop', 'sb-1', ...withKey()])).out).toBe('sb-1: stopped\n');
    expect((await cli(['resume', 'sb-1', ...withKey()])).out).toBe('sb-1: running\n');
  });
});

describe('prompt', () => {
  it('prints the answer as it streams (deltas of cumulative parts), across a cut connection', async () => {
    op.runScript.events = [
      { event: 'execution.started', data: { sessionId: 's' } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'Hel' } } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'Hello' } } },
      { event: 'result', data: { finalText: 'Hello' } },
    ];
    op.runScript.cutAfter = 2;
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'say', 'hello']);
    expect(r.code).toBe(0);
    expect(r.out).toBe('Hello\n');
    expect(r.err).toContain('run run-1');
  });

  it('--json prints one event per line', async () => {
    op.runScript.events = [
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'x' } } },
      { event: 'result', data: { finalText: 'x' } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), '--json', 'hi']);
    const lines = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.id, l.event])).toEqual([
      ['1', 'message.part.updated'],
      ['2', 'result'],
    ]);
  });

  it('Ctrl-C cancels the run on the operator and exits 130', async () => {
    op.runScript.events = []; // a run that goes on until cancelled
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'long', 'task'], { abortAfterMs: 300 });
    expect(r.code).toBe(130);
    expect(op.cancelled).toEqual(['run-1']);
  });

  it("follows the operator's run records: run.completed prints the final text, run.failed exits 5", async () => {
    op.runScript.events = [
      { event: 'run.queued', data: { run_id: 'run-1' } },
      { event: 'run.completed', data: { run_id: 'run-1', final_text: 'done', usage: null } },
    ];
    expect(await cli(['prompt', 'sb-1', ...withKey(), 'hi'])).toMatchObject({ code: 0, out: 'done\n' });
    await op.close();
    op = await startSpecOperator();
    op.sandboxes.set('sb-1', {
      id: 'sb-1',
      owner: owner.address.toLowerCase(),
      state: 'running',
      secrets: {},
    });
    op.runScript.events = [
      { event: 'run.failed', data: { run_id: 'run-1', code: 'AGENT_TIMEOUT', message: 'agent timed out' } },
    ];
    const failed = await cli(['prompt', 'sb-1', '--operator', op.url, '--private-key', key, '--json', 'hi']);
    expect(failed.code).toBe(5);
    expect(failed.err).toMatch(/agent timed out/);
    expect(JSON.parse(failed.out.trim()).event).toBe('run.failed');
  });

  it('an error event fails the command with exit 5', async () => {
    op.runScript.events = [
      { event: 'error', data: { code: 'AGENT_EXECUTION_FAILED', message: 'codex not installed' } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'hi']);
    expect(r.code).toBe(5);
    expect(r.err).toMatch(/codex not installed/);
  });
});

describe('terminal', () => {
  it('sends stdin to the shell, prints its output, and leaves on Ctrl-]', async () => {
    const stdin = new PassThrough();
    const running = cli(['terminal', 'sb-1', ...withKey()], { stdin });
    await new Promise((r) => setTimeout(r, 200));
    stdin.write('ls\r');
    await new Promise((r) => setTimeout(r, 100));
    stdin.write(Buffer.from([0x1d]));
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.out).toBe('$ ls\r');
    expect(op.terminalInput).toEqual(['ls\r']);
    expect(op.log).toContain('DELETE /api/sandboxes/sb-1/terminals/term-1');
  });

  it('ends with the shell', async () => {
    const stdin = new PassThrough();
    const running = cli(['terminal', 'sb-1', ...withKey()], { stdin });
    await new Promise((r) => setTimeout(r, 200));
    stdin.write('exit\r');
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.err).toContain('[terminal closed]');
  });
});

describe('on-chain commands', () => {
  const devnetFile = inject('devnetStateFile');

  it('create refuses bad flags and secret-looking env before touching the chain (exit 1)', async () => {
    expect((await cli(['create', '--devnet', devnetFile, '--tee', 'sgx'])).code).toBe(1);
    expect((await cli(['create', '--devnet', devnetFile, '--cpu', 'two'])).code).toBe(1);
    const r = await cli(['create', '--devnet', devnetFile, '--env', 'AWS_SECRET_ACCESS_KEY=x']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/looks like a secret.*secrets set/);
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
