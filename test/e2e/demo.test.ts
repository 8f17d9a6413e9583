// The README demo's path as a test, through the real programs: an `agent-sandbox-operator run`
// process on a fresh cloud service of the shared devnet and the real Docker engine, driven only by
// the `agent-sandbox` CLI (spawned): create → login → exec → prompt (the demo's own agent program
// via SANDBOX_AGENT_COMMAND) → secrets set/list/wipe → workflows → delete, then no container of it
// remains.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliResult, type CloudOperator, ROOT, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const AGENT = readFileSync(join(ROOT, 'scripts', 'demo', 'agent.sh'), 'utf8');
const RUN = `e2e-demo-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-demo';
const docker = new Docker();

const ownerKey = generatePrivateKey();
const owner = privateKeyToAccount(ownerKey);
let op: CloudOperator | undefined;
let dir = '';
let operatorUrl = '';

/** The owner's CLI against this test's operator (see fixture.ts). */
const cli = (args: string[], env: Record<string, string> = {}) => op!.cli(args, env);
/** Expects exit 0, showing the CLI's and the operator's output when it is not. */
const ok = (r: CliResult) => op!.ok(r);

const containersOf = (sandboxId: string) =>
  docker.listContainers({ all: true, filters: { label: [`agent-sandbox.id=${sandboxId}`, SUITE_LABEL] } });

beforeAll(async () => {
  op = await startCloudOperator(devnet, { run: RUN, suiteLabel: SUITE_LABEL, image, ownerKey });
  ({ dir, url: operatorUrl } = op);
}, 180_000);

afterAll(async () => {
  await op?.close();
}, 60_000);

describe('the demo path through the CLI', () => {
  let id = '';
  const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;

  it('create (job 0) returns a running sandbox on the operator, with progress on stderr', async () => {
    const r = ok(
      await cli([
        'create',
        '--json',
        '--name',
        'demo',
        '--env',
        'GREETING=hello',
        '--env',
        `SANDBOX_AGENT_COMMAND=${AGENT}`,
      ]),
    );
    const out = JSON.parse(r.stdout) as {
      sandbox: { id: string; state: string };
      operator: Address;
      operator_url: string;
    };
    expect(out.sandbox.id).toMatch(/^sbx-/);
    expect(out.sandbox.state).toBe('running');
    expect(out.operator.toLowerCase()).toBe(devnet.accounts.operator1.address.toLowerCase());
    expect(out.operator_url).toBe(operatorUrl);
    expect(r.stderr).toMatch(/job submitted: call \d+/);
    expect(r.stderr).toContain('health_check');
    id = out.sandbox.id;
    expect(await containersOf(id)).toHaveLength(1);
  }, 150_000);

  it('a create naming a platform-owned env key is refused: the CLI names the key and why, exit 5', async () => {
    const r = await cli(['create', '--name', 'refused', '--env', 'SIDECAR_AGENT_COMMAND=echo hi']);
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toContain('env_json.SIDECAR_AGENT_COMMAND');
    expect(r.stderr).toMatch(/owned by the platform/);
  }, 120_000);

  it('login caches a session (0600) without printing the token; list shows the sandbox', async () => {
    const r = ok(await cli(['login']));
    expect(r.stdout).toContain(`signed in to ${operatorUrl} as ${owner.address}`);
    const file = join(dir, 'cli-config', 'sessions.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const cached = JSON.stringify(JSON.parse(await readFile(file, 'utf8')));
    const token = /"token":"([^"]+)"/.exec(cached)?.[1];
    expect(token).toBeTruthy();
    expect(r.stdout + r.stderr).not.toContain(token!);
    const list = ok(await cli(['list']));
    expect(list.stdout).toMatch(new RegExp(`^${id}\\trunning\\tname=demo`, 'm'));
  });

  it('exec runs in the sandbox as the agent user; a failing command exits 7 with its output', async () => {
    const r = ok(
      await cli(['exec', id, '--', 'echo "$GREETING from $(whoami)"; echo "water the plants" > notes.txt']),
    );
    expect(r.stdout).toBe('hello from agent\n');
    const bad = await cli(['exec', id, '--', 'echo oops >&2; exit 3']);
    expect(bad.code).toBe(7);
    expect(bad.stderr).toContain('oops');
  });

  it('prompt streams the demo agent run to completion', async () => {
    const r = ok(await cli(['prompt', id, 'what is in my workspace?']));
    expect(r.stderr).toMatch(/^run \S+/m);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^demo-agent: received "what is in my workspace\?"/);
    expect(r.stdout).toContain('demo-agent: working in /home/agent as agent');
    expect(r.stdout).toContain('demo-agent: notes.txt says: water the plants');
    expect(lines.at(-1)).toBe(
      'Final answer: your message has 5 words; in capitals: WHAT IS IN MY WORKSPACE?',
    );
    // The same run as events: the stream ends with the operator's completion record.
    const j = ok(await cli(['prompt', '--json', id, 'hi']));
    const events = j.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { event: string }).event);
    expect(events.at(-1)).toBe('run.completed');
    expect(events).toContain('message.part.updated');
  }, 90_000);

  it('secrets: set from the environment, seen by exec, listed by name only, wiped', async () => {
    const set = ok(await cli(['secrets', 'set', id, 'DEMO_API_TOKEN'], { DEMO_API_TOKEN: secret }));
    expect(set.stdout).toContain('DEMO_API_TOKEN');
    expect(set.stdout + set.stderr).not.toContain(secret);
    const seen = ok(await cli(['exec', id, '--', 'printf %s "$DEMO_API_TOKEN" | sha256sum; cat notes.txt']));
    expect(seen.stdout).toContain(createHash('sha256').update(secret).digest('hex'));
    // The workspace survives the container being recreated with the secret.
    expect(seen.stdout).toContain('water the plants');
    const list = ok(await cli(['secrets', 'list', id]));
    expect(list.stdout.trim().split('\n')).toEqual(['DEMO_API_TOKEN']);
    const listJson = ok(await cli(['--json', 'secrets', 'list', id]));
    expect(listJson.stdout).not.toContain(secret);
    ok(await cli(['secrets', 'wipe', id]));
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, expanded inside the sandbox
    const after = ok(await cli(['exec', id, '--', 'echo "[${DEMO_API_TOKEN:-unset}]"']));
    expect(after.stdout).toBe('[unset]\n');
    expect(ok(await cli(['secrets', 'list', id])).stdout.trim()).toBe('');
  }, 120_000);

  it('workflows (jobs 2/3/4 through the CLI): a command and a prompt run, the owner reads their runs, another wallet reads and triggers nothing, cancel', async () => {
    const runsOf = async (wf: string, done = (r: { status: string }) => r.status !== 'running') => {
      // Condition polling: each CLI call takes seconds, the runs milliseconds.
      for (let i = 0; i < 20; i++) {
        const rs = JSON.parse(ok(await cli(['workflow', 'runs', wf, '--json'])).stdout) as Array<
          Record<string, unknown>
        >;
        if (rs.length && rs.every((r) => done(r as { status: string }))) return rs;
      }
      throw new Error(`workflow ${wf} did not finish`);
    };
    const created = ok(
      await cli([
        'workflow',
        'create',
        id,
        '--json',
        '--name',
        'count',
        '--command',
        'echo "wf-$((40+2))" >> wf.log; wc -l < wf.log',
      ]),
    );
    const wf = (JSON.parse(created.stdout) as { workflow_id: string }).workflow_id;
    expect(created.stderr).toMatch(/create job submitted: call \d+/);
    const trig = ok(await cli(['workflow', 'trigger', wf]));
    expect(trig.stdout).toMatch(/^wfr-\S+\trunning/);
    const [run] = await runsOf(wf);
    expect(run).toMatchObject({
      trigger: 'manual',
      kind: 'command',
      status: 'completed',
      exit_code: 0,
      stdout: '1\n',
    });

    const agent = ok(
      await cli([
        'workflow',
        'create',
        id,
        '--json',
        '--name',
        'ask',
        '--prompt',
        'what is in my workspace?',
      ]),
    );
    const awf = (JSON.parse(agent.stdout) as { workflow_id: string }).workflow_id;
    ok(await cli(['workflow', 'trigger', awf]));
    const [arun] = await runsOf(awf);
    expect(arun).toMatchObject({
      kind: 'prompt',
      status: 'completed',
      agent_run_id: expect.stringMatching(/^run-/),
    });
    expect(arun?.['final_text']).toContain('Final answer: your message has 5 words');

    // Another wallet: the API shows it nothing, the chain refuses its trigger and cancel.
    const stranger = {
      AGENT_SANDBOX_PRIVATE_KEY: generatePrivateKey(),
      AGENT_SANDBOX_CONFIG_DIR: join(dir, 'stranger'),
    };
    const peek = await cli(['workflow', 'runs', wf, '--json'], stranger);
    expect(peek.code).toBe(2);
    expect(peek.stdout + peek.stderr).not.toContain('wf-42');
    expect(ok(await cli(['workflow', 'list', '--json'], stranger)).stdout.trim()).toBe('[]');
    for (const action of ['trigger', 'cancel']) {
      const r = await cli(['workflow', action, wf], stranger);
      expect(r.code).not.toBe(0);
    }
    expect(await runsOf(wf)).toHaveLength(1);

    ok(await cli(['workflow', 'cancel', wf]));
    const list = ok(await cli(['workflow', 'list']));
    expect(list.stdout).toMatch(new RegExp(`^${wf}\tcount\tcanceled\tmanual\t${id}\truns 1$`, 'm'));
    expect(list.stdout).toMatch(new RegExp(`^${awf}\task\tactive`, 'm'));
    expect((await cli(['workflow', 'trigger', wf])).code).not.toBe(0);
  }, 150_000);

  it('delete (job 1) removes the sandbox: no container remains and get exits 3', async () => {
    const r = ok(await cli(['delete', '--json', id]));
    // The operator's result, decoded from the tuple it posts (not raw bytes).
    expect(JSON.parse(r.stdout).result).toMatchObject({ sandboxId: id, deleted: true, state: 'deleted' });
    expect(await containersOf(id)).toHaveLength(0);
    const gone = await cli(['get', id]);
    expect(gone.code).toBe(3);
  }, 120_000);
});
