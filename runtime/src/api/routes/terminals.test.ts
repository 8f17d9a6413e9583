// Terminals proxied to the sidecar's PTYs; the stream passes frames through as they come.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

describe('terminals', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  let id: string;
  beforeAll(async () => {
    h = await startHarness();
    o = await h.newOwner();
    id = h.addSandbox(o.address).id;
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    await h.close();
  });
  const base = () => `/api/sandboxes/${id}/terminals`;

  it('create → list → get → resize → stream receives input live → delete', async () => {
    const created = await h.call('POST', base(), { token: o.token, body: { cols: 100, rows: 30 } });
    expect(created.status).toBe(200);
    const tid = created.json.sessionId as string;
    expect(created.json.data.streamUrl).toBe(`${base()}/${tid}/stream`);
    expect((await h.call('GET', base(), { token: o.token })).json.data).toEqual([{ sessionId: tid }]);
    expect((await h.call('GET', `${base()}/${tid}`, { token: o.token })).status).toBe(200);
    expect(
      (await h.call('PATCH', `${base()}/${tid}`, { token: o.token, body: { cols: 120, rows: 40 } })).status,
    ).toBe(200);

    // Open the stream, then send input: the frame must arrive while the stream stays open.
    const res = await fetch(`${h.url}${base()}/${tid}/stream`, {
      headers: { authorization: `Bearer ${o.token}` },
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = res.body!.getReader();
    await new Promise((r) => setTimeout(r, 50));
    const input = await h.call('POST', `${base()}/${tid}/input`, { token: o.token, body: { data: 'ls\n' } });
    expect(input.json).toEqual({ success: true });
    let text = '';
    while (!text.includes('data.stdout')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('"text":"ls\\n"');
    h.sidecar.writeTerminal('second');
    text = '';
    while (!text.includes('second')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();

    expect((await h.call('DELETE', `${base()}/${tid}`, { token: o.token })).json).toMatchObject({
      deleted: true,
    });
  });

  it('errors: unknown terminal → 404 SESSION_NOT_FOUND; bad sizes → 400; bad id → 400', async () => {
    const r = await h.call('GET', `${base()}/nope`, { token: o.token });
    expect(r.status).toBe(404);
    expect(r.json.error.code).toBe('SESSION_NOT_FOUND');
    expect((await h.call('GET', `${base()}/nope/stream`, { token: o.token })).status).toBe(404);
    expect(
      (await h.call('PATCH', `${base()}/x`, { token: o.token, body: { cols: 0, rows: 1 } })).status,
    ).toBe(400);
    expect((await h.call('GET', `${base()}/bad%20id`, { token: o.token })).status).toBe(400);
  });
});
