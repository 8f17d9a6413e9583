// The real thing: the built sandbox image in a real container, driven over its published loopback port.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SandboxContainer, startSandboxContainer } from './testing/sandbox-container.ts';
import { readSse } from './testing/sidecar-fixture.ts';

const AGENT = [
  'if [ "$SIDECAR_AGENT_MESSAGE" = hang ]; then echo started; sleep 321; fi',
  'for i in 1 2 3 4; do echo "step $i of $SIDECAR_AGENT_MESSAGE ($SIDECAR_AGENT_MODEL)"; sleep 0.1; done',
].join('\n');

let sb: SandboxContainer;
beforeAll(async () => {
  sb = await startSandboxContainer(inject('sandboxImage'), {
    env: { SIDECAR_AGENT_COMMAND: AGENT, SANDBOX_SECRET: 's3cret-value' },
    labels: { 'agent-sandbox.suite': 'sidecar-container' },
  });
});
afterAll(async () => {
  await sb?.remove();
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
const exec = (body: unknown) => call('POST', '/terminals/commands', body);

describe('sandbox container', () => {
  it('is healthy without a token and refuses requests without one', async () => {
    expect((await fetch(`${sb.url}/health`)).status).toBe(200);
    expect((await fetch(`${sb.url}/terminals`)).status).toBe(401);
  });

  it('execs as uid 1000 with env and cwd, never seeing the token; tini reaps orphans', async () => {
    const r = await exec({
      command:
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
        'echo "$(id -un) $(id -u):$(id -g) $PWD $HOME $SANDBOX_SECRET $X ${SIDECAR_AUTH_TOKEN:-none}"; (sleep 0.1 &)',
      cwd: '/home/agent/workspace',
      env: { X: 'y' },
    });
    expect(r.status).toBe(200);
    expect(r.json.result.stdout.trim()).toBe(
      'agent 1000:1000 /home/agent/workspace /home/agent s3cret-value y none',
    );
    await new Promise((res) => setTimeout(res, 500));
    const zombies = await exec({ command: "ps -eo stat= | grep -c '^Z' || true" });
    expect(zombies.json.result.stdout.trim()).toBe('0');
    const pid1 = await exec({
      command: 'cat /proc/1/comm; ps -o user= -p $(pgrep -f sidecar.cjs | head -1)',
    });
    expect(pid1.json.result.stdout.split('\n').slice(0, 2)).toEqual(['tini', 'root']);
  });

  it('times out a command that never ends with exit code 124', async () => {
    const r = await exec({ command: 'sleep 60', timeout_ms: 300 });
    expect(r.json.result.exitCode).toBe(124);
  });

  it('gives a real PTY whose resize changes stty size', async () => {
    const id = (await call('POST', '/terminals', { cols: 90, rows: 20 })).json.sessionId;
    const res = await fetch(`${sb.url}/terminals/${id}/stream?token=${sb.token}`);
    let out = '';
    const done = readSse(res, (f) => {
      out += f.data;
      return /B=\d+ \d+/.test(out);
    });
    await call('POST', `/terminals/${id}/execute`, { command: 'echo A=$(stty size)' });
    for (let i = 0; i < 100 && !/A=\d+/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    await call('PATCH', `/terminals/${id}`, { cols: 132, rows: 43 });
    await call('POST', `/terminals/${id}/execute`, { command: 'echo B=$(stty size)' });
    await done;
    expect(out).toMatch(/A=20 90/);
    expect(out).toMatch(/B=43 132/);
    expect((await call('DELETE', `/terminals/${id}`)).json).toEqual({ deleted: true, sessionId: id });
  });

  it('round-trips a file and refuses a symlink escape', async () => {
    const w = await call('POST', '/files/write', { path: 'workspace/notes/a.md', content: '# hi\n' });
    expect(w.json).toMatchObject({ success: true, data: { size: 5 } });
    const r = await call('POST', '/files/read', { path: '/home/agent/workspace/notes/a.md' });
    expect(r.json.data.content).toBe('# hi\n');
    const owner = await exec({ command: 'stat -c %u:%g workspace/notes/a.md' });
    expect(owner.json.result.stdout.trim()).toBe('1000:1000');
    await exec({ command: 'ln -s /etc/shadow workspace/shadow' });
    const esc = await call('POST', '/files/read', { path: 'workspace/shadow' });
    expect(esc.status).toBe(403);
  });

  it('streams an agent run through SIDECAR_AGENT_COMMAND: several parts, then a result', async () => {
    const res = await fetch(`${sb.url}/agents/run/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'demo', backend: { model: 'tiny' } }),
    });
    const frames = await readSse(res, (f) => f.event === 'result' || f.event === 'error');
    expect(frames[0]!.event).toBe('execution.started');
    const parts = frames.filter((f) => f.event === 'message.part.updated');
    expect(parts.length).toBeGreaterThanOrEqual(4);
    const result = JSON.parse(frames.at(-1)!.data);
    expect(frames.at(-1)!.event).toBe('result');
    expect(result.finalText).toBe(
      [
        'step 1 of demo (tiny)',
        'step 2 of demo (tiny)',
        'step 3 of demo (tiny)',
        'step 4 of demo (tiny)',
      ].join('\n'),
    );
  });

  it('cancels a running agent', async () => {
    const res = await fetch(`${sb.url}/agents/run/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hang' }),
    });
    const frames = await readSse(res, (f) => {
      if (f.event === 'message.part.updated') void call('POST', '/agents/run/cancel', {});
      return f.event === 'error' || f.event === 'result';
    });
    expect(frames.at(-1)!.event).toBe('error');
    await new Promise((r) => setTimeout(r, 300));
    const ps = await exec({ command: 'pgrep -f "[s]leep 321" || echo none' });
    expect(ps.json.result.stdout.trim()).toBe('none');
  });

  it('stops cleanly on SIGTERM (tini forwards it; the sidecar exits 0)', async () => {
    await sb.container.stop({ t: 10 });
    const info = await sb.container.inspect();
    expect(info.State.ExitCode).toBe(0);
  });
});
