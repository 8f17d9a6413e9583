// The "done when", through the real programs: an `agent-sandbox-operator run` process that
// serves the harness image, on a fresh cloud service of the shared devnet, driven only by the
// spawned `agent-sandbox` CLI: `create --agent claude` (job 0 → the harness image) → `secrets set`
// of the keys and base URLs → for each of codex, claude, opencode, gemini: `prompt --backend <h>`
// against the scripted model server makes the harness run a tool that writes a file (`exec -- cat`
// sees it), the `--json` events carry the tool call and its output, the final text and the usage
// the server charged, and a `--session` follow-up reaches the server with the first turn in it.
// One operator, one sandbox, the four harnesses in turn (CI-cheap).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import Docker from 'dockerode';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ModelServer } from '../model-server/server.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'client', 'bin', 'agent-sandbox.mjs');
const RUN = `e2e-agents-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-agents';
const HARNESSES = ['codex', 'claude', 'opencode', 'gemini'] as const;
const SECRET = `sk-test-${randomBytes(12).toString('hex')}`;
const docker = new Docker();

const ownerKey = generatePrivateKey();
const owner = privateKeyToAccount(ownerKey);
let dir = '';
let operator: ChildProcess | undefined;
let operatorUrl = '';
let serviceId = 0n;
let server: ModelServer;
let keys: Record<string, string> = {};
/** Each harness's session id (the follow-ups continue it). */
const sessions: Record<string, string> = {};

const freePort = (): Promise<number> =>
  new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
    s.on('error', rej);
  });

const operatorLog = () => {
  try {
    return readFileSync(join(dir, 'operator.log'), 'utf8').slice(-3000);
  } catch {
    return '(no log)';
  }
};

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI launcher as a user would, with this test's chain, key, operator and cache. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: dir,
      AGENT_SANDBOX_CONFIG_DIR: join(dir, 'cli-config'),
      AGENT_SANDBOX_RPC: devnet.rpcUrl,
      AGENT_SANDBOX_TANGLE: devnet.contracts.tangle,
      AGENT_SANDBOX_SERVICE: `${serviceId}`,
      AGENT_SANDBOX_PRIVATE_KEY: ownerKey,
      AGENT_SANDBOX_OPERATOR: operatorUrl,
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((res) => child.on('close', (code) => res({ code, stdout, stderr })));
}

function ok(r: CliResult): CliResult {
  expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}\noperator log:\n${operatorLog()}`).toBe(0);
  return r;
}

// biome-ignore lint/suspicious/noExplicitAny: run event payloads
type Ev = { event: string; data: any };
const events = (r: CliResult): Ev[] =>
  r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Ev);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), `${RUN}-`));
  // SANDBOX_EGRESS=open puts sandboxes on Docker's default bridge with no egress rules: under the
  // default `public` policy a sandbox may not reach the host or private addresses (by design), and
  // the scripted model server stands in for a provider on exactly such an address (the bridge
  // gateway). A real provider is a public address, reachable under `public`.
  const bridge = await docker.getNetwork('bridge').inspect();
  const gateway: string = bridge.IPAM?.Config?.[0]?.Gateway ?? '172.17.0.1';
  server = await ModelServer.start(gateway);
  keys = {
    OPENAI_API_KEY: SECRET,
    OPENAI_BASE_URL: `${server.url}/v1`,
    ANTHROPIC_API_KEY: SECRET,
    ANTHROPIC_BASE_URL: server.url,
    GEMINI_API_KEY: SECRET,
    GOOGLE_GEMINI_BASE_URL: server.url,
  };
  // Built once by scripts/test.sh (cached by content hash); here only looked up.
  const harness = await ensureSandboxImage({
    withHarnesses: true,
    onProgress: (l) => process.stderr.write(`[harness image] ${l}\n`),
  });
  const jobs = new DevnetJobs(devnet);
  serviceId = await jobs.newService('cloud', '0x', { operators: ['operator1'], permitted: [owner.address] });
  const keyFile = join(dir, 'operator-ecdsa.key');
  await writeFile(keyFile, `${devnet.accounts.operator1.privateKey}\n`, { mode: 0o600 });
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.cloud,
      serviceId,
      dataDir: join(dir, 'operator1'),
      keyFile,
      port: await freePort(),
      operatorId: `${RUN}-operator1`,
      image,
      labels: `agent-sandbox.test=1,${SUITE_LABEL}`,
      extra: { SANDBOX_HARNESS_IMAGE: harness.tag, SANDBOX_EGRESS: 'open' },
    },
    randomBytes(32).toString('hex'),
  );
  operator = spawnOperator({ env, detached: true, stderr: openSync(join(dir, 'operator.log'), 'a') });
  operatorUrl = await operatorReady(operator, { timeoutMs: 90_000, log: operatorLog });
}, 900_000);

afterAll(async () => {
  const c = operator;
  if (c && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {}
  }
  for (const x of await docker.listContainers({ all: true, filters: { label: [SUITE_LABEL] } })) {
    if (x.Labels['agent-sandbox.operator'] === `${RUN}-operator1`)
      await docker
        .getContainer(x.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
  }
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('agent-sandbox prompt with each harness, through the operator', () => {
  let id = '';

  it('create --agent claude runs the sandbox on the harness image; secrets set passes the keys', async () => {
    const r = ok(await cli(['create', '--json', '--name', 'agents', '--agent', 'claude']));
    const out = JSON.parse(r.stdout) as { sandbox: { id: string; state: string } };
    expect(out.sandbox.state).toBe('running');
    id = out.sandbox.id;
    const [c] = await docker.listContainers({ filters: { label: [`agent-sandbox.id=${id}`] } });
    expect(c?.Image).toMatch(/^agent-sandbox-harnesses:/);

    const set = ok(await cli(['secrets', 'set', id, ...Object.keys(keys)], keys));
    expect(set.stdout + set.stderr).not.toContain(SECRET);
  }, 300_000);

  describe.each(HARNESSES)('%s', (harness) => {
    const session = `sess-${harness}-${randomBytes(4).toString('hex')}`;
    sessions[harness] = session;

    it('prompt --backend: the tool writes a file; the events carry the call, its output, the final text and the usage charged', async () => {
      server.script = {
        command: `echo ${harness}-wrote-this > ${harness}.txt && echo tool-said-${harness}`,
        finalText: `I wrote ${harness}.txt for you.`,
      };
      const mark = server.requests.length;
      const r = ok(
        await cli([
          'prompt',
          '--json',
          id,
          '--backend',
          harness,
          '--model',
          'scripted-model',
          '--session',
          session,
          `first turn for ${harness}: write the file`,
        ]),
      );
      expect(r.stdout + r.stderr).not.toContain(SECRET);
      const evs = events(r);
      const tools = evs
        .filter((e) => e.event === 'message.part.updated' && e.data?.part?.type === 'tool')
        .map((e) => e.data.part);
      expect(tools.map((p) => p.tool.status)).toEqual(['running', 'completed']);
      expect(JSON.stringify(tools[0].tool.input)).toContain(`${harness}.txt`);
      expect(tools[1].tool.output).toContain(`tool-said-${harness}`);

      const result = evs.find((e) => e.event === 'result')?.data;
      expect(result, r.stdout).toBeDefined();
      expect(result.finalText).toBe(`I wrote ${harness}.txt for you.`);
      expect(result.metadata).toMatchObject({ harness, model: 'scripted-model' });
      const charged = server.charged(mark);
      expect(result.usage).toEqual({
        inputTokens: charged.input,
        outputTokens: charged.output,
        cachedInputTokens: charged.cached,
      });
      expect(evs.at(-1)?.event).toBe('run.completed');

      const cat = ok(await cli(['exec', id, '--', `cat ${harness}.txt`]));
      expect(cat.stdout).toBe(`${harness}-wrote-this\n`);
    }, 240_000);

    it('prompt --session continues the conversation (the model server sees the first turn)', async () => {
      server.script = { command: 'echo second', finalText: 'Second answer.' };
      const mark = server.requests.length;
      // The sandbox was created with `--agent claude`: its prompts need no --backend (with an OpenAI
      // key set too, the sidecar alone would pick codex).
      const backend = harness === 'claude' ? [] : ['--backend', harness];
      const r = ok(
        await cli([
          'prompt',
          '--json',
          id,
          ...backend,
          '--model',
          'scripted-model',
          '--session',
          session,
          `second turn for ${harness}`,
        ]),
      );
      const result = events(r).find((e) => e.event === 'result')?.data;
      expect(result?.finalText, r.stdout).toBe('Second answer.');
      expect(result.metadata).toMatchObject({ harness });
      const turn = server.requests.slice(mark).find((q) => q.raw.includes(`second turn for ${harness}`));
      expect(turn?.raw).toContain(`first turn for ${harness}`);
      expect(turn?.raw).toContain(`I wrote ${harness}.txt for you.`);
    }, 240_000);
  });

  it('a --session follow-up after secrets set recreated the container still continues the conversation', async () => {
    ok(await cli(['secrets', 'set', id, ...Object.keys(keys)], keys));
    server.script = { command: 'echo third', finalText: 'Third answer.' };
    const mark = server.requests.length;
    const r = ok(await cli(['prompt', id, '--session', sessions['claude']!, 'third turn for claude']));
    expect(r.stdout).toContain('Third answer.');
    const turn = server.requests.slice(mark).find((q) => q.raw.includes('third turn for claude'));
    expect(turn, 'the third turn reached the model server').toBeDefined();
    expect(turn!.raw.includes('first turn for claude'), 'the third turn carries the first').toBe(true);
  }, 240_000);
});
