// Runs: prompt/task as background runs, their SSE events (resumable with Last-Event-ID, exactly
// once), one active run per sandbox, cancel, and events that survive an operator restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';
import { readSse } from '../testing/sse-reader.ts';

const METRICS_TOKEN = 'metrics-token-for-the-runs-test';

describe('runs', () => {
  let h: Harness;
  let o: Awaited<ReturnType<Harness['newOwner']>>;
  beforeAll(async () => {
    h = await startHarness({
      config: { rateLimits: { write: 1000, read: 1000 }, metricsToken: METRICS_TOKEN },
    });
    o = await h.newOwner();
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [o.token]);
    await h.close();
  });

  const base = (id: string) => `/api/sandboxes/${id}`;
  const waitDone = async (id: string, runId: string) => {
    for (let i = 0; i < 200; i++) {
      const r = await h.call('GET', `${base(id)}/runs/${runId}`, { token: o.token });
      if (['completed', 'failed', 'cancelled'].includes(r.json.status)) return r.json;
      await new Promise((res) => setTimeout(res, 20));
    }
    throw new Error('run did not finish');
  };

  it('happy: prompt → 202 queued → SSE streamed to completion with ids → run completed', async () => {
    const id = h.addSandbox(o.address).id;
    const r = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'hello' } });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ status: 'queued' });
    expect(r.json.run_id).toMatch(/^run-/);
    const sse = await readSse(`${h.url}${base(id)}/runs/${r.json.run_id}/events`, { token: o.token });
    expect(sse.contentType).toMatch(/text\/event-stream/);
    const names = sse.events.map((e) => e.event);
    expect(names[0]).toBe('run.queued');
    expect(names).toContain('execution.started');
    expect(names).toContain('message.part.updated');
    expect(names.slice(-2)).toEqual(['result', 'run.completed']);
    expect(sse.events.map((e) => e.id)).toEqual(sse.events.map((_, i) => `${r.json.run_id}:${i + 1}`));
    const run = await waitDone(id, r.json.run_id);
    expect(run).toMatchObject({
      status: 'completed',
      final_text: 'echo: hello',
      session_id: r.json.session_id,
    });
    expect(run.usage).toEqual({ inputTokens: 3, outputTokens: 5 });
    // The usage is counted per sandbox and harness for Prometheus (shown to the operator's token).
    const metrics = await (
      await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(metrics).toContain(`agent_sandbox_agent_input_tokens_total{sandbox_id="${id}",harness="codex"} 3`);
    expect(metrics).toContain(
      `agent_sandbox_agent_output_tokens_total{sandbox_id="${id}",harness="codex"} 5`,
    );
    expect(metrics).toMatch(/agent_sandbox_agent_runs_total\{harness="codex",status="completed"\} \d+/);
  });

  it("a deleted sandbox's runs are swept (record and events); a live sandbox's are kept", async () => {
    const gone = h.addSandbox(o.address).id;
    const kept = h.addSandbox(o.address).id;
    const start = async (id: string) =>
      (await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } })).json.run_id;
    const [g, k] = [await start(gone), await start(kept)];
    await waitDone(gone, g);
    await waitDone(kept, k);
    h.sandboxes.records.set(gone, { ...h.sandboxes.records.get(gone)!, state: 'deleted' });
    expect(await h.api.sweepRuns()).toBeGreaterThanOrEqual(1);
    expect(await h.api.runs.get(g)).toBeUndefined();
    expect(await h.api.runs.get(k)).toBeDefined();
    const events = await h.store.collection<{ id: number }>('api_run_events').entries();
    expect(events.some(([key]) => key.startsWith(`${g}:`))).toBe(false);
    // Past the retention (7 days by default) the finished run goes too.
    expect(await h.api.sweepRuns(Date.now() + 8 * 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expect(await h.api.runs.get(k)).toBeUndefined();
  });

  it('reconnecting with Last-Event-ID mid-stream gets every later event exactly once', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 20;
    h.sidecar.behaviour.eventDelayMs = 15;
    try {
      const r = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'long' } });
      const url = `${h.url}${base(id)}/runs/${r.json.run_id}/events`;
      const first = await readSse(url, { token: o.token, stopAfter: 4 });
      const lastId = first.events.at(-1)!.id!;
      const second = await readSse(url, { token: o.token, lastEventId: lastId, stopAfter: 5 });
      const rest = await readSse(url, { token: o.token, lastEventId: second.events.at(-1)!.id! });
      const ids = [...first.events, ...second.events, ...rest.events].map((e) => e.id);
      const full = await readSse(url, { token: o.token });
      expect(ids).toEqual(full.events.map((e) => e.id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(full.events.at(-1)!.event).toBe('run.completed');
      // ?last_event_id= works too (EventSource cannot always set the header).
      const q = await readSse(`${url}?last_event_id=${full.events.at(-2)!.id}`, { token: o.token });
      expect(q.events.map((e) => e.event)).toEqual(['run.completed']);
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });

  it('error: one active run per sandbox → 409 CHAT_RUN_ACTIVE; another sandbox is independent', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.eventDelayMs = 50;
    try {
      const first = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'a' } });
      const second = await h.call('POST', `${base(id)}/task`, { token: o.token, body: { prompt: 'b' } });
      expect(second.status).toBe(409);
      expect(second.json.error.code).toBe('CHAT_RUN_ACTIVE');
      expect(second.json.error.details.run_id).toBe(first.json.run_id);
      const other = h.addSandbox(o.address).id;
      expect(
        (await h.call('POST', `${base(other)}/prompt`, { token: o.token, body: { message: 'c' } })).status,
      ).toBe(202);
      await waitDone(id, first.json.run_id);
      expect(
        (await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'd' } })).status,
      ).toBe(202);
    } finally {
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });

  it('cancel: ends the run as cancelled, tells the sidecar, and is idempotent', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 100;
    h.sidecar.behaviour.eventDelayMs = 20;
    try {
      const r = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
      await new Promise((res) => setTimeout(res, 80));
      const cancels = h.sidecar.cancels;
      const c = await h.call('POST', `${base(id)}/runs/${r.json.run_id}/cancel`, { token: o.token });
      expect(c.status).toBe(200);
      expect(c.json.status).toBe('cancelled');
      expect(h.sidecar.cancels).toBe(cancels + 1);
      const again = await h.call('POST', `${base(id)}/runs/${r.json.run_id}/cancel`, { token: o.token });
      expect(again.json.status).toBe('cancelled');
      const sse = await readSse(`${h.url}${base(id)}/runs/${r.json.run_id}/events`, { token: o.token });
      expect(sse.events.at(-1)!.event).toBe('run.cancelled');
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });

  it('a cancel is delivered to the sidecar before the sandbox admits its next run (it cannot hit that run)', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 100;
    h.sidecar.behaviour.eventDelayMs = 20;
    h.sidecar.behaviour.cancelDelayMs = 300;
    try {
      const a = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'a' } });
      await readSse(`${h.url}${base(id)}/runs/${a.json.run_id}/events`, { token: o.token, stopAfter: 3 });
      const cancels = h.sidecar.cancels;
      const cancel = h.call('POST', `${base(id)}/runs/${a.json.run_id}/cancel`, { token: o.token });
      // Each attempt is a full request round trip: the next run is admitted as soon as it may be.
      let next = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'b' } });
      for (let i = 0; next.status === 409 && i < 5000; i++) {
        next = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'b' } });
      }
      expect(next.status).toBe(202);
      expect(h.sidecar.cancels).toBe(cancels + 1);
      expect((await cancel).json.status).toBe('cancelled');
      expect((await waitDone(id, next.json.run_id)).status).toBe('completed');
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
      h.sidecar.behaviour.cancelDelayMs = 0;
    }
  });

  it('capability document: a sidecar that cannot say which harnesses it has gets no harness list (absent, not empty); a stopped sandbox → 409', async () => {
    const id = h.addSandbox(o.address).id;
    // This fixture serves no GET /agents.
    const doc = await h.call('GET', `${base(id)}/capabilities`, { token: o.token });
    expect(doc.status).toBe(200);
    expect(doc.json).not.toHaveProperty('harnesses');
    expect(doc.json).not.toHaveProperty('agent_command');
    expect(doc.json.streaming.turnIdempotency).toBe(true);
    const stopped = h.addSandbox(o.address, { state: 'stopped' }).id;
    const s = await h.call('GET', `${base(stopped)}/capabilities`, { token: o.token });
    expect(s.status).toBe(409);
    expect(s.json.error.code).toBe('SANDBOX_STOPPED');
  });

  it('cancel body: optional; an unknown field → 400; the right digest cancels, a finished run answers the same', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 100;
    h.sidecar.behaviour.eventDelayMs = 20;
    try {
      const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
      const url = `${base(id)}/runs/${p.json.run_id}/cancel`;
      const bad = await h.call('POST', url, { token: o.token, body: { reason: 'because' } });
      expect(bad.status).toBe(400);
      expect(bad.json.error.message).toContain('reason');
      const ok = await h.call('POST', url, {
        token: o.token,
        body: { request_digest: p.json.request_digest },
      });
      expect(ok.json.status).toBe('cancelled');
      const empty = await h.call('POST', url, { token: o.token, body: {} });
      expect(empty.json).toEqual(ok.json);
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });

  it('task: 202, runs with metadata; a failing agent ends the run as failed', async () => {
    const id = h.addSandbox(o.address).id;
    const t = await h.call('POST', `${base(id)}/task`, {
      token: o.token,
      body: { prompt: 'build', max_turns: 3 },
    });
    expect(t.status).toBe(202);
    expect((await waitDone(id, t.json.run_id)).status).toBe('completed');
    h.sidecar.behaviour.agentFails = true;
    try {
      const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
      const run = await waitDone(id, p.json.run_id);
      expect(run.status).toBe('failed');
      expect(run.error.code).toBe('AGENT_EXECUTION_FAILED');
    } finally {
      h.sidecar.behaviour.agentFails = false;
    }
  });

  it('errors: stopped sandbox → 409; bad body → 400; unknown run or another sandbox’s run → 404', async () => {
    const stopped = h.addSandbox(o.address, { state: 'stopped' }).id;
    const r = await h.call('POST', `${base(stopped)}/prompt`, { token: o.token, body: { message: 'x' } });
    expect(r.json.error.code).toBe('SANDBOX_STOPPED');
    const id = h.addSandbox(o.address).id;
    expect((await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: {} })).status).toBe(400);
    expect(
      (await h.call('POST', `${base(id)}/task`, { token: o.token, body: { prompt: 'x', max_turns: 0 } }))
        .status,
    ).toBe(400);
    expect((await h.call('GET', `${base(id)}/runs/run-${'0'.repeat(24)}`, { token: o.token })).status).toBe(
      404,
    );
    const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
    await waitDone(id, p.json.run_id);
    const other = h.addSandbox(o.address).id;
    expect((await h.call('GET', `${base(other)}/runs/${p.json.run_id}`, { token: o.token })).status).toBe(
      404,
    );
    const sse = await readSse(`${h.url}${base(other)}/runs/${p.json.run_id}/events`, { token: o.token });
    expect(sse.status).toBe(404);
    const unknown = await readSse(`${h.url}${base(id)}/runs/run-${'0'.repeat(24)}/events`, {
      token: o.token,
    });
    expect(unknown.status).toBe(404);
  });

  it("a Last-Event-ID from another run → 400, never a silent skip of this run's events", async () => {
    const id = h.addSandbox(o.address).id;
    const a = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'a' } });
    await waitDone(id, a.json.run_id);
    const b = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'b' } });
    await waitDone(id, b.json.run_id);
    const aEvents = await readSse(`${h.url}${base(id)}/runs/${a.json.run_id}/events`, { token: o.token });
    const foreign = aEvents.events.at(-1)!.id!;
    const url = `${h.url}${base(id)}/runs/${b.json.run_id}/events`;
    const viaHeader = await readSse(url, { token: o.token, lastEventId: foreign });
    expect(viaHeader.status).toBe(400);
    const viaQuery = await readSse(`${url}?last_event_id=${encodeURIComponent(foreign)}`, { token: o.token });
    expect(viaQuery.status).toBe(400);
    // A bare number (the old id form, which could belong to any run) is refused the same way.
    expect((await readSse(url, { token: o.token, lastEventId: '3' })).status).toBe(400);
    // B's own ids resume as before.
    const bEvents = await readSse(url, { token: o.token });
    const resumed = await readSse(url, { token: o.token, lastEventId: bEvents.events.at(-2)!.id! });
    expect(resumed.events.map((e) => e.event)).toEqual(['run.completed']);
  });

  it('events are in the encrypted store: after an operator restart they replay in full', async () => {
    const id = h.addSandbox(o.address).id;
    const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'persist me' } });
    await waitDone(id, p.json.run_id);
    const before = await readSse(`${h.url}${base(id)}/runs/${p.json.run_id}/events`, { token: o.token });
    await h.restart();
    const after = await readSse(`${h.url}${base(id)}/runs/${p.json.run_id}/events`, { token: o.token });
    expect(after.events).toEqual(before.events);
    expect((await h.call('GET', `${base(id)}/runs/${p.json.run_id}`, { token: o.token })).json.status).toBe(
      'completed',
    );
  });

  it('idempotency keys: kept across a restart, scoped to the sandbox, concurrent retries join one run, gone with the run', async () => {
    const id = h.addSandbox(o.address).id;
    const other = h.addSandbox(o.address).id;
    const headers = { 'idempotency-key': 'turn-restart-1' };
    const body = { message: 'persist my key' };
    const [a, b] = await Promise.all([
      h.call('POST', `${base(id)}/prompt`, { token: o.token, body, headers }),
      h.call('POST', `${base(id)}/prompt`, { token: o.token, body, headers }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    expect(b.json.run_id).toBe(a.json.run_id);
    await waitDone(id, a.json.run_id);
    await h.restart();
    const again = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body, headers });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ run_id: a.json.run_id, status: 'completed', replayed: true });
    // The same key on another sandbox is another turn.
    const elsewhere = await h.call('POST', `${base(other)}/prompt`, { token: o.token, body, headers });
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.json.run_id).not.toBe(a.json.run_id);
    await waitDone(other, elsewhere.json.run_id);
    // Header and field disagreeing is refused before anything runs.
    const both = await h.call('POST', `${base(id)}/prompt`, {
      token: o.token,
      body: { ...body, idempotency_key: 'another' },
      headers,
    });
    expect(both.status).toBe(400);
    // The key goes with its run: after the sandbox's runs are deleted it admits a new run.
    await h.api.runs.forgetSandbox(id);
    const keys = await h.store.collection<string>('api_run_keys').values();
    expect(keys).not.toContain(a.json.run_id);
    const fresh = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body, headers });
    expect(fresh.status).toBe(202);
    expect(fresh.json.run_id).not.toBe(a.json.run_id);
    await waitDone(id, fresh.json.run_id);
  });

  it('a run interrupted by a restart is recorded as failed, its events kept', async () => {
    const id = h.addSandbox(o.address).id;
    h.sidecar.behaviour.parts = 1000;
    h.sidecar.behaviour.eventDelayMs = 10;
    try {
      const p = await h.call('POST', `${base(id)}/prompt`, { token: o.token, body: { message: 'x' } });
      await new Promise((res) => setTimeout(res, 100));
      await h.restart();
      const run = (await h.call('GET', `${base(id)}/runs/${p.json.run_id}`, { token: o.token })).json;
      expect(run.status).toBe('failed');
      expect(run.error.code).toBe('INTERRUPTED');
      const sse = await readSse(`${h.url}${base(id)}/runs/${p.json.run_id}/events`, { token: o.token });
      expect(sse.events.at(-1)!.event).toBe('run.failed');
      expect(sse.events.length).toBeGreaterThan(2);
    } finally {
      h.sidecar.behaviour.parts = 3;
      h.sidecar.behaviour.eventDelayMs = 5;
    }
  });
});
