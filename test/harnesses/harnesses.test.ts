// The four real harness CLIs (codex, claude, opencode, gemini) in one real container of the harness
// image, each pointed at the scripted model server: a prompt makes it run a tool that writes a file;
// the run streams the tool call and output, the final text and the usage the server charged; a
// follow-up in the same session carries the first turn; cancel kills the harness's process group;
// credentials never show in events or files, and a missing one fails at once naming the variable.
//
// The container runs on Docker's default bridge (like the other sidecar container tests, no operator
// egress rules), so it reaches the model server listening on the bridge gateway address.
import { randomBytes } from 'node:crypto';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import {
  readSse,
  type SandboxContainer,
  type SseFrame,
  startSandboxContainer,
} from '@agent-sandbox/sidecar/testing';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelServer } from '../model-server/server.ts';

const HARNESSES = ['codex', 'claude', 'opencode', 'gemini'] as const;
const SECRET = `sk-test-${randomBytes(12).toString('hex')}`;

let sb: SandboxContainer;
let server: ModelServer;
let env: Record<string, string>;

beforeAll(async () => {
  const docker = new Docker();
  const bridge = await docker.getNetwork('bridge').inspect();
  const gateway: string = bridge.IPAM?.Config?.[0]?.Gateway ?? '172.17.0.1';
  server = await ModelServer.start(gateway);
  // Built once by scripts/test.sh (cached by content hash); a cold build here takes minutes.
  const { tag } = await ensureSandboxImage({
    withHarnesses: true,
    onProgress: (l) => process.stderr.write(`[harness image] ${l}\n`),
  });
  sb = await startSandboxContainer(tag, { labels: { 'agent-sandbox.suite': 'harnesses' } });
  env = {
    OPENAI_API_KEY: SECRET,
    OPENAI_BASE_URL: `${server.url}/v1`,
    ANTHROPIC_API_KEY: SECRET,
    ANTHROPIC_BASE_URL: server.url,
    GEMINI_API_KEY: SECRET,
    GOOGLE_GEMINI_BASE_URL: server.url,
  };
  await putEnv(env);
}, 900_000);

afterAll(async () => {
  await sb?.remove();
  await server?.close();
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${sb.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: tests read many response shapes
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function putEnv(e: Record<string, string>) {
  expect((await call('PUT', '/env', { env: e })).status).toBe(200);
}

async function sh(command: string): Promise<string> {
  const r = await call('POST', '/terminals/commands', { command });
  return `${r.json.result.stdout}${r.json.result.stderr}`;
}

function stream(body: unknown, stop?: (f: SseFrame) => boolean): Promise<SseFrame[]> {
  return fetch(`${sb.url}/agents/run/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((res) => readSse(res, (f) => f.event === 'result' || f.event === 'error' || !!stop?.(f), 120_000));
}

// biome-ignore lint/suspicious/noExplicitAny: SSE payloads
const data = (f: SseFrame): any => JSON.parse(f.data);
const usageOf = (frames: SseFrame[]) => data(frames.find((f) => f.event === 'result')!).usage;
const asUsage = (c: { input: number; output: number; cached: number }) => ({
  inputTokens: c.input,
  outputTokens: c.output,
  ...(c.cached ? { cachedInputTokens: c.cached } : {}),
});
const parts = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === 'message.part.updated').map((f) => data(f).part);

describe.each(HARNESSES)(
  '%s in the harness image',
  (harness) => {
    const session = `sess-${harness}-${randomBytes(4).toString('hex')}`;

    it('runs a tool that writes a file and streams the call, its output, the final text and the usage charged', async () => {
      server.script = {
        command: `echo ${harness}-wrote-this > ${harness}.txt && echo tool-said-${harness}`,
        finalText: `I wrote ${harness}.txt for you.`,
      };
      const mark = server.requests.length;
      const frames = await stream({
        identifier: harness,
        message: `first turn for ${harness}: write the file`,
        sessionId: session,
        backend: { model: 'scripted-model' },
      });
      const raw = frames.map((f) => f.data).join('\n');
      expect(frames.find((f) => f.event === 'error')?.data).toBeUndefined();

      const tools = parts(frames).filter((p) => p.type === 'tool');
      expect(tools.map((p) => p.tool.status)).toEqual(['running', 'completed']);
      expect(tools[0].id).toBe(tools[1].id);
      expect(JSON.stringify(tools[0].tool.input)).toContain(`${harness}.txt`);
      expect(tools[1].tool.output).toContain(`tool-said-${harness}`);
      expect(tools[1].tool.callId).toBeTruthy();

      const result = data(frames.find((f) => f.event === 'result')!);
      expect(result.finalText).toBe(`I wrote ${harness}.txt for you.`);
      expect(result.metadata).toMatchObject({ sessionId: session, harness, model: 'scripted-model' });
      expect(result.usage).toEqual(asUsage(server.charged(mark)));
      expect(result.timing.totalMs).toBeGreaterThan(0);
      expect(await sh(`cat /home/agent/${harness}.txt`)).toBe(`${harness}-wrote-this\n`);

      // The key reached the model server, and nowhere else.
      expect(JSON.stringify(server.requests.slice(mark).map((r) => r.headers))).toContain(SECRET);
      expect(raw).not.toContain(SECRET);
    });

    it('continues the same conversation when the session id comes back', async () => {
      server.script = { command: 'echo second', finalText: 'Second answer.' };
      const mark = server.requests.length;
      const frames = await stream({
        identifier: harness,
        message: `second turn for ${harness}`,
        sessionId: session,
        backend: { model: 'scripted-model' },
      });
      expect(frames.find((f) => f.event === 'error')?.data).toBeUndefined();
      const turn = server.requests.slice(mark).find((r) => r.raw.includes(`second turn for ${harness}`));
      expect(turn?.raw).toContain(`first turn for ${harness}`);
      expect(turn?.raw).toContain(`I wrote ${harness}.txt for you.`);
      expect(usageOf(frames)).toEqual(asUsage(server.charged(mark)));
    });

    it('counts a follow-up as what that run cost, not the conversation so far (resumed twice)', async () => {
      server.script = { command: 'echo third', finalText: 'Third answer.' };
      const mark = server.requests.length;
      const frames = await stream({
        identifier: harness,
        message: `third turn for ${harness}`,
        sessionId: session,
        backend: { model: 'scripted-model' },
      });
      expect(frames.find((f) => f.event === 'error')?.data).toBeUndefined();
      expect(server.requests.slice(mark).some((r) => r.raw.includes(`second turn for ${harness}`))).toBe(
        true,
      );
      expect(usageOf(frames)).toEqual(asUsage(server.charged(mark)));
    });

    it("cancel mid-run kills the harness's process group, its tool included", async () => {
      const marker = `cancel-${harness}-${randomBytes(3).toString('hex')}`;
      // Not `sleep`: claude refuses a standalone long sleep. The `echo` after it keeps the shell
      // (whose command line holds the marker) from exec'ing into tail.
      server.script = { command: `tail -f /dev/null; echo ${marker}`, finalText: 'never' };
      const frames = stream({
        identifier: harness,
        message: 'run the slow tool',
        sessionId: `${session}-c`,
        backend: { model: 'scripted-model' },
      });
      // `[c]` keeps pgrep's own shell (whose command line holds the pattern) from matching itself.
      const pgrep = `pgrep -f '[c]${marker.slice(1)}' || true`;
      // Mid-run: once the harness has started the tool (opencode reports a tool only when it ends).
      let ended = false;
      void frames.finally(() => {
        ended = true;
      });
      while (!ended && (await sh(pgrep)) === '');
      expect(ended ? (await frames).map((f) => f.data) : 'running').toBe('running');
      expect((await call('POST', '/agents/run/cancel', { sessionId: `${session}-c` })).json.cancelled).toBe(
        1,
      );
      const end = (await frames).at(-1)!;
      expect(end.event).toBe('error');
      expect(data(end).message).toMatch(/cancelled/);
      expect(await sh(pgrep)).toBe('');
    });
    // Each CLI starts in seconds idle, but in tens of seconds on a loaded 2-core machine.
  },
  240_000,
);

describe('the agents on PATH where the user works', () => {
  async function run(command: string) {
    const r = await call('POST', '/terminals/commands', { command });
    return { exit: r.json.result.exitCode as number, out: `${r.json.result.stdout}${r.json.result.stderr}` };
  }

  it('exec (bash -lc, as `agent-sandbox exec` and command workflows run): each CLI answers --version', async () => {
    for (const h of HARNESSES) {
      const r = await run(`${h} --version`);
      expect(r, h).toMatchObject({ exit: 0 });
      expect(r.out.trim(), h).toMatch(/\d+\.\d+/);
    }
    // The CLIs run on the image's Node 24, not Debian's.
    expect((await run('node --version')).out).toMatch(/^v2[4-9]\./);
  });

  it('a login shell (terminals) and a login shell started from one keep them', async () => {
    const which = 'command -v codex claude opencode gemini';
    for (const command of [`bash -lic '${which}'`, `env -i HOME=/home/agent bash -lc '${which}'`]) {
      const r = await run(command);
      expect(r.exit, `${command}: ${r.out}`).toBe(0);
      // (An interactive shell without a tty also says "no job control" on stderr.)
      const found = r.out.split('\n').filter((l) => l.startsWith('/opt/harnesses/node_modules/.bin/'));
      expect(found, `${command}: ${r.out}`).toHaveLength(4);
    }
  });

  it('an agent program (SANDBOX_AGENT_COMMAND, run with bash -lc) finds them too', async () => {
    await putEnv({ ...env, SANDBOX_AGENT_COMMAND: 'claude --version && codex --version' });
    try {
      const frames = await stream({ message: 'versions' });
      expect(frames.at(-1)?.event).toBe('result');
      expect(data(frames.at(-1)!).finalText).toMatch(/\d+\.\d+/);
    } finally {
      await putEnv(env);
    }
  });
});

describe('cancel', () => {
  it('also ends what an agent started in a session of its own (as harnesses start their tools)', async () => {
    const marker = `detached-${randomBytes(3).toString('hex')}`;
    // The agent starts a tool in a new session, then ignores TERM: only a signal to the tool's own
    // pid reaches it, since neither the run's group nor the agent's exit takes it along.
    await putEnv({
      ...env,
      SANDBOX_AGENT_COMMAND: `setsid bash -c 'tail -f /dev/null; echo ${marker}' & trap '' TERM; echo started; wait`,
    });
    try {
      const frames = stream({ message: 'go', sessionId: 'detached' });
      const pgrep = `pgrep -f '[d]${marker.slice(1)}' || true`;
      while ((await sh(pgrep)) === '');
      expect((await call('POST', '/agents/run/cancel', { sessionId: 'detached' })).json.cancelled).toBe(1);
      expect((await frames).at(-1)?.event).toBe('error');
      expect(await sh(pgrep)).toBe('');
    } finally {
      await putEnv(env);
    }
  });
});

describe('agent home', () => {
  it("gemini's settings are written as the agent user: a symlink planted there is replaced, its root-owned target untouched", async () => {
    const target = '/etc/debian_version';
    const before = await sh(`stat -c %U:%a ${target}; md5sum ${target}`);
    expect(before).toMatch(/^root:/);
    await sh(
      `mkdir -p ~/.gemini && rm -f ~/.gemini/settings.json && ln -s ${target} ~/.gemini/settings.json`,
    );
    server.script = { command: 'echo ok', finalText: 'ok' };
    const frames = await stream({
      identifier: 'gemini',
      message: 'hi',
      backend: { model: 'scripted-model' },
    });
    expect(frames.find((f) => f.event === 'error')?.data).toBeUndefined();
    expect(await sh(`stat -c %U:%a ${target}; md5sum ${target}`)).toBe(before);
    expect(
      await sh('test -L ~/.gemini/settings.json && echo link || stat -c %U ~/.gemini/settings.json'),
    ).toBe('agent\n');
    expect(await sh('cat ~/.gemini/settings.json')).toContain('gemini-api-key');
  });
});

describe('credentials', () => {
  it('a harness without its key fails at once naming the variable to set', async () => {
    await putEnv({ OPENAI_API_KEY: SECRET });
    try {
      const frames = await stream({ identifier: 'claude', message: 'hi' });
      const end = frames.at(-1)!;
      expect(end.event).toBe('error');
      expect(data(end)).toMatchObject({ code: 'AGENT_CREDENTIALS_MISSING' });
      expect(data(end).message).toContain('ANTHROPIC_API_KEY');
    } finally {
      await putEnv(env);
    }
  });

  it('are redacted from run events even when the agent prints them', async () => {
    await putEnv({ ...env, SANDBOX_AGENT_COMMAND: 'echo "my key is $OPENAI_API_KEY"' });
    try {
      const frames = await stream({ message: 'leak it' });
      const raw = frames.map((f) => f.data).join('\n');
      expect(raw).not.toContain(SECRET);
      expect(data(frames.at(-1)!).finalText).toBe('my key is [redacted:OPENAI_API_KEY]');
    } finally {
      await putEnv(env);
    }
  });

  it('are never written to a file outside the harness config dirs', async () => {
    const found = await sh(
      `grep -rl --exclude-dir=proc '${SECRET}' /home/agent /tmp /opt 2>/dev/null || echo none`,
    );
    expect(found).toBe('none\n');
  });
});
