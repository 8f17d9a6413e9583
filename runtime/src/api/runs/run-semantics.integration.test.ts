// Run semantics the agent-environment provider relies on, on the real SandboxManager, Docker engine
// and sandbox image with a SANDBOX_AGENT_COMMAND agent: idempotent turns (Idempotency-Key + request
// digest), idempotent cancel of the exact run, exclusive run-scoped replay cursors, strict turn
// options, frames bounded to 1 MiB, and a per-sandbox capability document that matches the routes.
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionAuth } from '../../auth/index.ts';
import { makeRig, type TestRig } from '../../sandbox/testing/rig.ts';
import { createOperatorApi } from '../app.ts';
import type { ApiSandboxes } from '../deps.ts';
import { type OperatorApiServer, serveOperatorApi } from '../serve.ts';
import { signInOverHttp } from '../testing/sign-in.ts';
import { readSse } from '../testing/sse-reader.ts';
import { MAX_FRAME_BYTES } from './frames.ts';

const image = inject('sandboxImage');
const QUOTES = 700_000;
// The message picks the behaviour: `slow` runs until cancelled, `quotes` prints 700 000 `"`
// (1.4 MB once JSON-escaped: bigger than a frame), anything else answers at once.
const AGENT = [
  'case "$SIDECAR_AGENT_MESSAGE" in',
  '  slow*) for i in $(seq 1 600); do echo "tick $i"; sleep 0.1; done;;',
  `  quotes*) head -c ${QUOTES} /dev/zero | tr '\\0' '"';;`,
  '  *) echo "reply: $SIDECAR_AGENT_MESSAGE";;',
  'esac',
].join('\n');

describe('run semantics on a real sandbox', () => {
  let rig: TestRig;
  let server: OperatorApiServer;
  let token: string;
  let id: string;
  const account = privateKeyToAccount(generatePrivateKey());

  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    bearer = token,
  ) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const base = () => `/api/sandboxes/${id}`;
  const events = (runId: string, lastEventId?: string) =>
    readSse(`${server.url}${base()}/runs/${runId}/events`, {
      token,
      timeoutMs: 60_000,
      ...(lastEventId ? { lastEventId } : {}),
    });
  /** Follows a run's events to its end (no polling): the stream closes when the run is over. */
  const finish = async (runId: string) => {
    await events(runId);
    return (await call('GET', `${base()}/runs/${runId}`)).json;
  };

  beforeAll(async () => {
    rig = await makeRig(image);
    const sessions = await SessionAuth.create({
      secret: rig.secret,
      store: rig.store,
      siwe: { publicUrl: () => server.url, chainId: 31337 },
    });
    const sandboxes: ApiSandboxes = rig.manager;
    const api = createOperatorApi({
      sessions,
      sandboxes,
      store: rig.store,
      metrics: new Registry(),
      logger: pino({ level: 'silent' }),
      mode: 'cloud',
      capabilities: {},
    });
    server = await serveOperatorApi(api, { port: 0 });
    const rec = await rig.manager.create({
      owner: account.address,
      serviceId: 1,
      callId: 'run-semantics-1',
      env: { SANDBOX_AGENT_COMMAND: AGENT },
    });
    id = rec.id;
    token = await signInOverHttp(server.url, account);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await rig?.cleanup();
  });

  it('an unknown turn option is refused (400 naming it), not dropped; nothing runs', async () => {
    const p = await call('POST', `${base()}/prompt`, { message: 'x', max_turns: 3 });
    expect(p.status).toBe(400);
    expect(p.json.error.code).toBe('VALIDATION');
    expect(p.json.error.message).toContain('max_turns');
    const t = await call('POST', `${base()}/task`, { prompt: 'x', temperature: 0.2 });
    expect(t.status).toBe(400);
    expect(t.json.error.message).toContain('temperature');
  });

  it('the same idempotency key and request → one run; a changed request → 409 naming the digest', async () => {
    const key = { 'idempotency-key': `turn-${Date.now()}` };
    const first = await call('POST', `${base()}/prompt`, { message: 'hello once' }, key);
    expect(first.status).toBe(202);
    expect(first.json.run_id).toMatch(/^run-/);
    expect(first.json.request_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The retry carries other bearer material (a second sign-in's token): still the same turn.
    const other = await signInOverHttp(server.url, account);
    const again = await call('POST', `${base()}/prompt`, { message: 'hello once' }, key, other);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({
      run_id: first.json.run_id,
      session_id: first.json.session_id,
      request_digest: first.json.request_digest,
      replayed: true,
    });
    // The key may travel in the body too; the same key there is the same turn.
    const inBody = await call('POST', `${base()}/prompt`, {
      message: 'hello once',
      idempotency_key: key['idempotency-key'],
    });
    expect(inBody.json.run_id).toBe(first.json.run_id);
    const changed = await call('POST', `${base()}/prompt`, { message: 'hello twice' }, key);
    expect(changed.status).toBe(409);
    expect(changed.json.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(changed.json.error.details).toMatchObject({
      run_id: first.json.run_id,
      request_digest: first.json.request_digest,
    });
    expect(changed.json.error.message).toContain(first.json.request_digest);
    // The same key on a task is another request, not the same turn.
    const asTask = await call('POST', `${base()}/task`, { prompt: 'hello once' }, key);
    expect(asTask.status).toBe(409);
    const run = await finish(first.json.run_id);
    expect(run.status).toBe('completed');
    expect(run.request_digest).toBe(first.json.request_digest);
    // After the run ended the key still names it (persisted with the run).
    const late = await call('POST', `${base()}/prompt`, { message: 'hello once' }, key);
    expect(late.json).toMatchObject({ run_id: first.json.run_id, status: 'completed', replayed: true });
  }, 60_000);

  it('cancel is idempotent and names the exact run: cancel twice (at once, then again) → the same answer', async () => {
    const p = await call('POST', `${base()}/prompt`, { message: 'slow' });
    expect(p.status).toBe(202);
    // Wait for the agent's first output through the stream itself (no sleep).
    await readSse(`${server.url}${base()}/runs/${p.json.run_id}/events`, {
      token,
      stopAfter: 3,
      timeoutMs: 30_000,
    });
    const url = `${base()}/runs/${p.json.run_id}/cancel`;
    // Digest-bound: a cancel naming another request's digest is refused and cancels nothing.
    const wrong = await call('POST', url, { request_digest: `sha256:${'0'.repeat(64)}` });
    expect(wrong.status).toBe(409);
    expect(wrong.json.error.details.request_digest).toBe(p.json.request_digest);
    expect((await call('GET', `${base()}/runs/${p.json.run_id}`)).json.status).toBe('running');
    const [a, b] = await Promise.all([
      call('POST', url, { request_digest: p.json.request_digest }),
      call('POST', url),
    ]);
    const c = await call('POST', url);
    expect(a.status).toBe(200);
    expect(a.json.status).toBe('cancelled');
    expect(a.json.run_id).toBe(p.json.run_id);
    expect(b.json).toEqual(a.json);
    expect(c.json).toEqual(a.json);
  }, 60_000);

  it("a replay cursor is exclusive and selects its own run: run A's cursor never yields run B's events", async () => {
    const a = await call('POST', `${base()}/prompt`, { message: 'run a' });
    await finish(a.json.run_id);
    const b = await call('POST', `${base()}/prompt`, { message: 'run b' });
    await finish(b.json.run_id);
    const aAll = (await events(a.json.run_id)).events;
    // Exclusive: after A's k-th event come exactly A's events k+1…
    for (const k of [1, 2, aAll.length - 1]) {
      const after = await events(a.json.run_id, aAll[k - 1]!.id);
      expect(after.events).toEqual(aAll.slice(k));
    }
    // A's cursor against B's stream is refused, never a resume into B.
    const crossed = await events(b.json.run_id, aAll[1]!.id);
    expect(crossed.status).toBe(400);
    // A cursor this run never issued (past its last event) is refused too, not an empty replay.
    const ahead = await events(a.json.run_id, `${a.json.run_id}:${aAll.length + 1}`);
    expect(ahead.status).toBe(400);
    const bText = JSON.stringify((await events(b.json.run_id)).events);
    expect(bText).toContain('run b');
    expect(JSON.stringify(aAll)).not.toContain('run b');
  }, 60_000);

  it('every streamed frame is at most 1 MiB: big text deltas are split, the end frames truncated with a marker', async () => {
    const p = await call('POST', `${base()}/prompt`, { message: 'quotes' });
    const sse = await events(p.json.run_id);
    const sizes = sse.events.map((e) =>
      Buffer.byteLength(`id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`),
    );
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    // Splitting loses nothing: the deltas still add up to the whole output.
    const text = sse.events
      .filter((e) => e.event === 'message.part.updated')
      .map((e) => JSON.parse(e.data).part.text)
      .join('');
    expect(text).toBe('"'.repeat(QUOTES));
    const done = JSON.parse(sse.events.at(-1)!.data);
    expect(sse.events.at(-1)!.event).toBe('run.completed');
    expect(done.truncated).toMatchObject({ fields: ['final_text'], max_frame_bytes: MAX_FRAME_BYTES });
    const result = JSON.parse(sse.events.find((e) => e.event === 'result')!.data);
    expect(result.truncated.fields).toContain('finalText');
  }, 60_000);

  it('the capability document matches what the routes accept', async () => {
    const doc = (await call('GET', `${base()}/capabilities`)).json;
    expect(doc.sandbox_id).toBe(id);
    // A flag that is not true is absent: no `false` anywhere, and no interactions here.
    expect(JSON.stringify(doc)).not.toContain('false');
    expect(doc).not.toHaveProperty('interactions');
    expect(doc.dispatch).toEqual({ runControlRef: true, executionIdOnAdmission: true });
    expect(doc.cancel).toEqual({ canonicalRunCancellation: true, digestBound: true, idempotent: true });
    expect(doc.runs).toEqual({ eventReplay: true, executionScopedStatus: true });
    expect(doc.streaming).toMatchObject({ detach: true, replay: true, turnIdempotency: true });
    expect(doc.streaming.maxFrameBytes).toBe(MAX_FRAME_BYTES);
    // This image has no harness CLI; the user's agent program answers every turn.
    expect(doc.harnesses).toEqual([]);
    expect(doc.agent_command).toBe(true);
    // The turn options it lists are exactly the request fields the OpenAPI document declares, and
    // the routes refuse anything else.
    const openapi = (await call('GET', '/api/openapi.json')).json;
    const schemas = openapi.components.schemas;
    for (const [kind, name] of [
      ['prompt', 'PromptRequest'],
      ['task', 'TaskRequest'],
    ] as const) {
      expect([...doc.turn_options[kind]].sort()).toEqual(Object.keys(schemas[name].properties).sort());
      expect(schemas[name].additionalProperties).toBe(false);
      const r = await call('POST', `${base()}/${kind}`, { not_an_option: 1 });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toContain('not_an_option');
    }
    expect(doc.idempotency).toMatchObject({ header: 'Idempotency-Key', body_field: 'idempotency_key' });
    expect(doc.turn_options.prompt).toContain(doc.idempotency.body_field);
  }, 60_000);
});
