// /agents: listing, runs through SIDECAR_AGENT_COMMAND (JSON and SSE), cancel, failures, missing harness.
import { access, rm } from 'node:fs/promises';
import { type IncomingMessage, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

const AGENT = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
  'echo "model=$SIDECAR_AGENT_MODEL uid=$(id -u) pwd=$PWD token=${SIDECAR_AUTH_TOKEN:-none} key=$ANTHROPIC_API_KEY"',
  'case "$SIDECAR_AGENT_MESSAGE" in',
  '  fail) echo "bad things" >&2; exit 3;;',
  '  flood) seq 1 400000;;',
  // ~1.6 MB in 40 writes spread over ~2 s: many coalescing intervals, each with new text. The
  // done file also marks a run that was cancelled (the test stalls its reader until then).
  '  slowflood) trap "touch slowflood.done; exit 143" TERM; for i in $(seq 1 40); do head -c 40000 /dev/zero | tr "\\0" x; echo; sleep 0.05; done; touch slowflood.done;;',
  '  hang) (sleep 317 &); echo started; sleep 317;;',
  '  *) for i in 1 2 3; do echo "line $i: $SIDECAR_AGENT_MESSAGE"; sleep 0.15; done;;',
  'esac',
].join('\n');

let fx: SidecarFixture;
let bare: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture({ SIDECAR_AGENT_COMMAND: AGENT, ANTHROPIC_API_KEY: 'sk-test-key' });
  // No agent command and no harness CLIs on this PATH: the harness runs must fail by name.
  bare = await startSidecarFixture({ PATH: '/usr/bin:/bin' });
});
afterAll(async () => {
  await fx.close();
  await bare.close();
});

/** The stream on a raw socket, paused: nothing is read until the test resumes it. */
const rawStream = (f: SidecarFixture, body: unknown) =>
  new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${f.sidecar.url}/agents/run/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.token}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });

const stream = (f: SidecarFixture, body: unknown) =>
  fetch(`${f.sidecar.url}/agents/run/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${f.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('agents', () => {
  it('lists the agents', async () => {
    const r = await fx.call('GET', '/agents');
    expect(r.json.count).toBe(r.json.agents.length);
    expect(r.json.agents.map((a: { identifier: string }) => a.identifier)).toEqual([
      'default',
      'codex',
      'claude',
      'opencode',
      'gemini',
    ]);
    for (const a of r.json.agents)
      expect(Object.keys(a).sort()).toEqual(['description', 'displayName', 'identifier']);
  });

  it('runs the agent command as uid 1000 with the sandbox env, model and message, never the token', async () => {
    const r = await fx.call('POST', '/agents/run', {
      message: 'hello',
      backend: { model: 'm-1' },
      sessionId: 's-1',
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      success: true,
      sessionId: 's-1',
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    expect(r.json.response).toBe(r.json.data.finalText);
    expect(r.json.response).toContain(
      `model=m-1 uid=1000 pwd=${fx.workspace} token=none key=[redacted:ANTHROPIC_API_KEY]`,
    );
    expect(r.json.response).toContain('line 3: hello');
    expect(typeof r.json.traceId).toBe('string');
    expect(typeof r.json.durationMs).toBe('number');
  });

  it('streams execution.started, message parts as deltas, then the result', async () => {
    const frames = await readSse(
      await stream(fx, { message: 'streamed' }),
      (f) => f.event === 'result' || f.event === 'error',
    );
    expect(frames[0]!.event).toBe('execution.started');
    const parts = frames
      .filter((f) => f.event === 'message.part.updated')
      .map((f) => JSON.parse(f.data).part);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const [i, f] of frames.filter((x) => x.event === 'message.part.updated').entries()) {
      expect(JSON.parse(f.data).delta, `part ${i}`).toBe(true);
    }
    for (const p of parts) {
      expect(p.content).toBe(p.text);
      expect(p.id).toBe(parts[0].id);
      expect(p.type).toBe('text');
    }
    // Each event carries only what is new: appended in order they make the whole answer.
    expect(parts.at(-1).state).toBe('completed');
    expect(parts.slice(0, -1).every((p: { text: string }) => p.text.length > 0)).toBe(true);
    const result = JSON.parse(frames.at(-1)!.data);
    expect(
      parts
        .map((p: { text: string }) => p.text)
        .join('')
        .trim(),
    ).toBe(result.finalText);
    expect(frames.at(-1)!.event).toBe('result');
    expect(result.finalText).toContain('line 3: streamed');
    expect(result.response).toBe(result.finalText);
    expect(result.metadata.sessionId).toBe(JSON.parse(frames[0]!.data).sessionId);
    expect(typeof result.timing.totalMs).toBe('number');
  });

  it('bounds a flood of agent output and still delivers the result', async () => {
    const frames = await readSse(
      await stream(fx, { message: 'flood' }),
      (f) => f.event === 'result' || f.event === 'error',
    );
    const result = JSON.parse(frames.at(-1)!.data);
    expect(frames.at(-1)!.event).toBe('result');
    expect(result.finalText).toContain('\n1\n2\n3\n');
    expect(result.finalText.length).toBeLessThanOrEqual(1024 * 1024);
    expect((await fx.call('GET', '/health')).status).toBe(200);
  });

  it('delivers the result to a reader that stalls through a long flood (stream bytes stay bounded)', async () => {
    // The flake's cause: every part event carried the whole text so far (up to the 1 MiB output
    // limit), so a reader slowed by a busy machine let >8 MiB queue and the sidecar dropped the
    // stream before the result. Stall the reader for the whole run to make that deterministic.
    const res = await rawStream(fx, { message: 'slowflood' });
    const done = join(fx.workspace, 'slowflood.done');
    while (
      !(await access(done).then(
        () => true,
        () => false,
      ))
    )
      await new Promise((r) => setTimeout(r, 50));
    res.resume();
    const body = await new Promise<string>((resolve, reject) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve(text));
      res.on('error', reject);
    });
    const frames = body.split('\n\n').filter((b) => b.includes('data: '));
    expect(frames.at(-1)).toMatch(/^event: result\n/);
    // Deltas: the stream is about the output's size, not its square. The 1 MiB of text is sent
    // twice in the parts (text, content) and twice in the result (finalText, response).
    expect(body.length).toBeLessThan(5 * 1024 * 1024);
    await rm(done, { force: true });
  });

  it('cancels a running agent, killing its whole process group', async () => {
    const res = await stream(fx, { message: 'hang' });
    const frames = await readSse(res, (f) => {
      if (f.event === 'message.part.updated') void fx.call('POST', '/agents/run/cancel', {});
      return f.event === 'error' || f.event === 'result';
    });
    const last = frames.at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({
      code: 'AGENT_EXECUTION_FAILED',
      message: 'agent run cancelled',
    });
    await new Promise((r) => setTimeout(r, 300));
    const ps = await fx.call('POST', '/terminals/commands', {
      command: 'pgrep -f "[s]leep 317" || echo none',
    });
    expect(ps.json.result.stdout.trim()).toBe('none');
  });

  it('fails a run whose agent exits non-zero with 500 AGENT_EXECUTION_FAILED and its stderr', async () => {
    const r = await fx.call('POST', '/agents/run', { message: 'fail' });
    expect(r.status).toBe(500);
    expect(r.json.error.code).toBe('AGENT_EXECUTION_FAILED');
    expect(r.json.error.message).toContain('exited with code 3: bad things');
  });

  it('rejects a missing message with 400 and an unknown agent with 400', async () => {
    expect((await fx.call('POST', '/agents/run', {})).status).toBe(400);
    expect((await bare.call('POST', '/agents/run', { identifier: 'nope', message: 'x' })).status).toBe(400);
  });

  it('fails clearly, naming the harness, when its CLI is not installed', async () => {
    const r = await bare.call('POST', '/agents/run', { identifier: 'codex', message: 'x' });
    expect(r.status).toBe(500);
    expect(r.json.error.code).toBe('AGENT_EXECUTION_FAILED');
    expect(r.json.error.message).toContain("agent harness 'codex' is not installed");
    const frames = await readSse(
      await stream(bare, { message: 'x', backend: { type: 'gemini' } }),
      (f) => f.event === 'error',
    );
    expect(JSON.parse(frames.at(-1)!.data).message).toContain("'gemini' is not installed");
  });
});
