// /terminals: real PTY sessions (uid 1000, resize visible to `stty size`), both SSE frame formats, bad ids and states.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

let fx: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture();
});
afterAll(() => fx.close());

async function waitFor<T>(fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('terminals', () => {
  it('creates a PTY session whose resize changes stty size, streamed as JSON frames', async () => {
    const c = await fx.call('POST', '/terminals', { cols: 100, rows: 30, title: 't1' });
    expect(c.status).toBe(200);
    const id = c.json.sessionId;
    expect(c.json.data).toMatchObject({
      sessionId: id,
      shell: '/bin/bash',
      cols: 100,
      rows: 30,
      streamUrl: `/terminals/${id}/stream`,
    });
    const res = await fetch(`${fx.sidecar.url}/terminals/${id}/stream`, {
      headers: { authorization: `Bearer ${fx.token}` },
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    let out = '';
    const framesP = readSse(res, (f) => {
      const ev = JSON.parse(f.data);
      expect(ev.type).toBe('data.stdout');
      out += ev.properties.text;
      return /SIZE2=\d+ \d+/.test(out);
    });
    expect(
      (
        await fx.call('POST', `/terminals/${id}/execute`, {
          command: 'echo SIZE1=$(stty size) UID=$(id -u) TTY=$(tty)',
        })
      ).json,
    ).toEqual({ success: true });
    await waitFor(async () => (/SIZE1=\d+/.test(out) ? true : undefined));
    const p = await fx.call('PATCH', `/terminals/${id}`, { cols: 120, rows: 40 });
    expect(p.status).toBe(200);
    expect(p.json.data).toMatchObject({ cols: 120, rows: 40 });
    await fx.call('POST', `/terminals/${id}/input`, { data: 'echo SIZE2=$(stty size)\r' });
    await framesP;
    expect(out).toMatch(/SIZE1=30 100 UID=1000 TTY=\/dev\/pts\/\d+/);
    expect(out).toMatch(/SIZE2=40 120/);
  });

  it('streams raw text frames when the token comes as ?token=, and lists/gets sessions', async () => {
    const c = await fx.call('POST', '/terminals', {});
    const id = c.json.sessionId;
    expect(c.json.data).toMatchObject({ cols: 80, rows: 24 });
    const res = await fetch(`${fx.sidecar.url}/terminals/${id}/stream?token=${fx.token}`);
    let out = '';
    const done = readSse(res, (f) => {
      out += f.data;
      return out.includes('RAW-OK');
    });
    await fx.call('POST', `/terminals/${id}/execute`, { command: 'echo RAW-$((1+0))K | tr 1 O' });
    await done;
    expect(out).toContain('RAW-OK');
    const list = await fx.call('GET', '/terminals');
    expect(list.json.success).toBe(true);
    expect(list.json.data.map((s: { sessionId: string }) => s.sessionId)).toContain(id);
    const one = await fx.call('GET', `/terminals/${id}`);
    expect(one.json.data).toMatchObject({ sessionId: id, status: 'running' });
  });

  it('answers unknown ids with 404 SESSION_NOT_FOUND on every route', async () => {
    const id = '00000000-0000-0000-0000-000000000000';
    for (const [m, p, b] of [
      ['GET', `/terminals/${id}`, undefined],
      ['POST', `/terminals/${id}/input`, { data: 'x' }],
      ['POST', `/terminals/${id}/execute`, { command: 'x' }],
      ['PATCH', `/terminals/${id}`, { cols: 10, rows: 10 }],
      ['DELETE', `/terminals/${id}`, undefined],
    ] as const) {
      const r = await fx.call(m, p, b);
      expect(r.status).toBe(404);
      expect(r.json.error.code).toBe('SESSION_NOT_FOUND');
    }
  });

  it('answers input to an exited terminal with 409 SESSION_NOT_RUNNING, and deletes it', async () => {
    const id = (await fx.call('POST', '/terminals', {})).json.sessionId;
    await fx.call('POST', `/terminals/${id}/execute`, { command: 'exit 3' });
    const exited = await waitFor(async () => {
      const r = await fx.call('GET', `/terminals/${id}`);
      return r.json.data.status === 'exited' ? r.json.data : undefined;
    });
    expect(exited.exitCode).toBe(3);
    const r = await fx.call('POST', `/terminals/${id}/input`, { data: 'ls\n' });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('SESSION_NOT_RUNNING');
    expect((await fx.call('PATCH', `/terminals/${id}`, { cols: 10, rows: 10 })).status).toBe(409);
    const d = await fx.call('DELETE', `/terminals/${id}`);
    expect(d.json).toEqual({ deleted: true, sessionId: id });
    expect((await fx.call('GET', `/terminals/${id}`)).status).toBe(404);
  });

  it('hangs up the shell and its jobs when a session is deleted', async () => {
    const id = (await fx.call('POST', '/terminals', {})).json.sessionId;
    await fx.call('POST', `/terminals/${id}/execute`, { command: 'sleep 327 & sleep 328' });
    const running = async () =>
      (
        await fx.call('POST', '/terminals/commands', { command: 'pgrep -f "[s]leep 32[78]" | wc -l' })
      ).json.stdout.trim();
    await waitFor(async () => ((await running()) === '2' ? true : undefined));
    expect((await fx.call('DELETE', `/terminals/${id}`)).status).toBe(200);
    await waitFor(async () => ((await running()) === '0' ? true : undefined));
  });

  it('validates create and resize bodies', async () => {
    expect((await fx.call('POST', '/terminals', { cols: 0 })).status).toBe(400);
    expect((await fx.call('POST', '/terminals', { cwd: 'missing-dir' })).json.error.code).toBe('INVALID_CWD');
    const id = (await fx.call('POST', '/terminals', {})).json.sessionId;
    expect((await fx.call('PATCH', `/terminals/${id}`, { cols: 'wide' })).status).toBe(400);
    await fx.call('DELETE', `/terminals/${id}`);
  });
});
