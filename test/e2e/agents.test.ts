// The "done when", through the real programs: an `agent-sandbox-operator run` process that
// serves the harness image, on a fresh cloud service of the shared devnet, driven only by the
// spawned `agent-sandbox` CLI: `create --agent claude` (job 0 → the harness image) → `secrets set`
// of the keys and base URLs → for each of codex, claude, opencode, gemini: `prompt --backend <h>`
// against the scripted model server makes the harness run a tool that writes a file (`exec -- cat`
// sees it), the `--json` events carry the tool call and its output, the final text and the usage
// the server charged, and a `--session` follow-up reaches the server with the first turn in it.
// One operator, one sandbox, the four harnesses in turn (CI-cheap).
import { randomBytes } from 'node:crypto';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ModelServer } from '../model-server/server.ts';
import { type CliResult, type CloudOperator, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-agents-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-agents';
const HARNESSES = ['codex', 'claude', 'opencode', 'gemini'] as const;
const SECRET = `sk-test-${randomBytes(12).toString('hex')}`;
const docker = new Docker();

let op: CloudOperator | undefined;
let server: ModelServer;
let keys: Record<string, string> = {};
/** Each harness's session id (the follow-ups continue it). */
const sessions: Record<string, string> = {};

/** The owner's CLI against this test's operator (see fixture.ts). */
const cli = (args: string[], env: Record<string, string> = {}) => op!.cli(args, env);
const ok = (r: CliResult) => op!.ok(r);

// biome-ignore lint/suspicious/noExplicitAny: run event payloads
type Ev = { event: string; data: any };
const events = (r: CliResult): Ev[] =>
  r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Ev);

beforeAll(async () => {
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
  op = await startCloudOperator(devnet, {
    run: RUN,
    suiteLabel: SUITE_LABEL,
    image,
    extra: { SANDBOX_HARNESS_IMAGE: harness.tag, SANDBOX_EGRESS: 'open' },
  });
}, 900_000);

afterAll(async () => {
  await op?.close();
  await server?.close();
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
