// Workflows on real parts: the real sidecar (in-process, real HTTP, real processes and a real shell
// agent), the real SidecarClient, RunService/RunLog and the encrypted LevelDB store. The clock the
// scheduler reads is the test's, so a one-minute schedule is checked at its slots without waiting;
// one test fires through a real timer (the clock shifted to 150 ms before a minute boundary).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SidecarFixture, startSidecarFixture } from '@agent-sandbox/sidecar/testing';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunLog } from '../api/runs/run-log.ts';
import { RunService } from '../api/runs/run-service.ts';
import { TEST_SECRET } from '../api/testing/harness.ts';
import { SidecarClient } from '../sidecar-client/index.ts';
import { EncryptedStore } from '../store/index.ts';
import { parseAction } from './actions.ts';
import { nextSlot, parseTrigger } from './schedule.ts';
import { realClock, WorkflowScheduler } from './scheduler.ts';
import { type NewWorkflow, WorkflowService } from './workflow-service.ts';

const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-03-01T10:00:30Z');
const MIN = 60_000;

let fx: SidecarFixture;
let root: string;
let dir: string;
let store: EncryptedStore;
let seq = 0;

beforeAll(async () => {
  fx = await startSidecarFixture({
    SIDECAR_AGENT_COMMAND: 'echo "agent got: $SIDECAR_AGENT_MESSAGE"; echo "Final answer: done"',
  });
  root = await mkdtemp(join(tmpdir(), 'wf-svc-'));
});
// Each test its own store: a tick fires every due workflow in it.
beforeEach(async () => {
  dir = join(root, `s${seq}`);
  store = await EncryptedStore.open({ dir, secret: TEST_SECRET });
});
afterEach(async () => {
  await store?.close();
});
afterAll(async () => {
  await fx?.close();
  await rm(root, { recursive: true, force: true });
});

function service(
  s: EncryptedStore,
  clock: { now: number },
  extra: Partial<ConstructorParameters<typeof WorkflowService>[0]> = {},
) {
  const client = new SidecarClient({ sandboxId: 'sbx-wf', baseUrl: fx.sidecar.url, token: fx.token });
  const sidecars = { client: async () => client };
  const runLog = new RunLog(s);
  const runs = new RunService(runLog, sidecars, silent);
  return new WorkflowService({
    store: s,
    sidecars,
    runs,
    runLog,
    logger: silent,
    now: () => clock.now,
    ...extra,
  });
}

function def(over: Partial<NewWorkflow> = {}): NewWorkflow {
  seq++;
  return {
    workflowId: `${1000 + seq}`,
    serviceId: '7',
    owner: '0x00000000000000000000000000000000000000aa',
    name: `wf-${seq}`,
    workflowJson: JSON.stringify({ command: `echo tick-${seq}` }),
    triggerType: 'cron',
    triggerConfig: '* * * * *',
    targetKind: 0,
    targetSandboxId: 'sbx-wf',
    ...over,
  };
}

describe('triggers and actions are parsed, never guessed', () => {
  it('accepts a 5-field expression in a stated zone and refuses anything else with what to do', () => {
    expect(parseTrigger('cron', '*/5 * * * *')).toEqual({
      type: 'cron',
      expression: '*/5 * * * *',
      timezone: 'UTC',
    });
    const berlin = parseTrigger('cron', '{"cron":"0 9 * * *","timezone":"Europe/Berlin"}');
    // 09:00 in Berlin in March (CET, UTC+1) is 08:00 UTC.
    expect(new Date(nextSlot(berlin, T0)!).toISOString()).toBe('2026-03-02T08:00:00.000Z');
    expect(parseTrigger('manual', '')).toEqual({ type: 'manual' });
    expect(() => parseTrigger('cron', '* * * * * *')).toThrow(/exactly 5 fields/);
    expect(() => parseTrigger('cron', '{"cron":"* * * * *","timezone":"Mars/Base"}')).toThrow(/IANA/);
    expect(() => parseTrigger('cron', '61 * * * *')).toThrow(/invalid/);
    expect(() => parseTrigger('interval', '5')).toThrow(/"manual" or "cron"/);
    expect(parseAction('{"prompt":"hi","timeout_ms":5000}')).toEqual({
      kind: 'prompt',
      message: 'hi',
      timeoutMs: 5000,
    });
    expect(() => parseAction('{"command":"ls","prompt":"x"}')).toThrow(/exactly one/);
    expect(() => parseAction('{"script":"ls"}')).toThrow(/exactly one/);
  });
});

describe('the cron schedule', () => {
  it('fires a one-minute schedule at its slot and not before; the command runs and its output is kept', async () => {
    const clock = { now: T0 };
    const s = service(store, clock);
    const w = await s.create(def());
    expect(w.nextDueAt).toBe(Date.parse('2026-03-01T10:01:00Z'));
    expect(await s.tick(T0 + 29_000)).toEqual([]);
    clock.now = Date.parse('2026-03-01T10:01:00Z');
    const [run] = await s.tick();
    expect(run).toMatchObject({ trigger: 'cron', slotAt: clock.now, missedSlots: 0, status: 'running' });
    const done = await s.settled(run!.runId);
    expect(done).toMatchObject({ status: 'completed', exitCode: 0, stdout: `tick-${seq}\n` });
    expect((await s.get('7', w.workflowId))?.nextDueAt).toBe(Date.parse('2026-03-01T10:02:00Z'));
  });

  it('a restart between ticks never fires a slot twice; slots missed while down run once, never a burst', async () => {
    const clock = { now: T0 };
    const a = service(store, clock);
    const w = await a.create(def());
    clock.now = T0 + 30_000; // 10:01:00
    expect(await a.tick()).toHaveLength(1);
    await a.idle();
    // The process dies and a new one opens the same store at the same instant.
    await store.close();
    store = await EncryptedStore.open({ dir, secret: TEST_SECRET });
    const b = service(store, clock);
    expect(await b.tick()).toEqual([]);
    expect(await b.tick(clock.now + 59_000)).toEqual([]);
    // Down for five minutes: 10:02 … 10:06 passed; one run on catch-up.
    clock.now = Date.parse('2026-03-01T10:06:20Z');
    const fired = await b.tick();
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ slotAt: Date.parse('2026-03-01T10:06:00Z'), missedSlots: 4 });
    expect(await b.tick()).toEqual([]);
    await b.idle();
    expect((await b.runs('7', w.workflowId)).map((r) => r.status)).toEqual(['completed', 'completed']);
  });

  it('one active run per workflow: an overlapping tick is skipped and recorded as skipped', async () => {
    const clock = { now: T0 };
    const s = service(store, clock);
    const gate = `gate-${seq + 1}`;
    const w = await s.create(
      def({
        workflowJson: JSON.stringify({
          command: `while [ ! -e ${gate} ]; do sleep 0.05; done; echo through`,
        }),
      }),
    );
    clock.now = Date.parse('2026-03-01T10:01:00Z');
    const [first] = await s.tick();
    clock.now += MIN;
    const [second] = await s.tick();
    expect(second).toMatchObject({ status: 'skipped', error: { code: 'RUN_ACTIVE' } });
    await writeFile(join(fx.workspace, gate), '');
    expect(await s.settled(first!.runId)).toMatchObject({ status: 'completed', stdout: 'through\n' });
    const stored = await s.runs('7', w.workflowId);
    expect(stored.map((r) => r.status).sort()).toEqual(['completed', 'skipped']);
  });

  it('a run is bounded by its timeout', async () => {
    const clock = { now: T0 };
    const s = service(store, clock);
    const w = await s.create(
      def({
        triggerType: 'manual',
        triggerConfig: '',
        workflowJson: JSON.stringify({ command: 'sleep 30', timeout_ms: 300 }),
      }),
    );
    const run = await s.trigger('7', w.workflowId, '99');
    const done = await s.settled(run.runId);
    expect(done).toMatchObject({ status: 'timed_out', exitCode: 124, error: { code: 'TIMEOUT' } });
  });

  it('a cancelled workflow never fires again', async () => {
    const clock = { now: T0 };
    const s = service(store, clock);
    const w = await s.create(def());
    await s.cancel('7', w.workflowId);
    for (let i = 1; i <= 5; i++) expect(await s.tick(T0 + i * MIN)).toEqual([]);
    expect((await s.get('7', w.workflowId))?.nextDueAt).toBeNull();
    await expect(s.trigger('7', w.workflowId, '1')).rejects.toThrow(/canceled/);
    expect(await s.runs('7', w.workflowId)).toEqual([]);
  });

  it('a prompt workflow is an agent run with the run events of the API', async () => {
    const clock = { now: T0 };
    const s = service(store, clock);
    const w = await s.create(
      def({ triggerType: 'manual', triggerConfig: '', workflowJson: '{"prompt":"water the plants"}' }),
    );
    const run = await s.trigger('7', w.workflowId, '100');
    const done = await s.settled(run.runId);
    expect(done).toMatchObject({
      kind: 'prompt',
      status: 'completed',
      finalText: expect.stringContaining('done'),
    });
    const log = new RunLog(store);
    const names: string[] = [];
    const texts: string[] = [];
    for await (const ev of log.follow(done!.agentRunId!, 0)) {
      names.push(ev.event);
      texts.push(JSON.stringify(ev.data));
    }
    expect(names[0]).toBe('run.queued');
    expect(names.slice(-1)).toEqual(['run.completed']);
    expect(texts.join('\n')).toContain('agent got: water the plants');
  });

  it('a prompt workflow runs the harness the sandbox was created for (its agent_identifier), as prompt does', async () => {
    const runLog = new RunLog(store);
    const client = new SidecarClient({ sandboxId: 'sbx-wf', baseUrl: fx.sidecar.url, token: fx.token });
    const real = new RunService(runLog, { client: async () => client }, silent);
    const asked: unknown[] = [];
    const runs = {
      start: (o: Parameters<RunService['start']>[0]) => {
        asked.push(o.request.backend);
        return real.start(o);
      },
      cancel: real.cancel.bind(real),
    };
    const metadata: Record<string, Record<string, unknown>> = {
      'sbx-wf': { agent_identifier: 'claude' },
    };
    const s = service(store, { now: T0 }, { runs, sandboxMetadata: (id) => metadata[id] });
    for (const json of ['{"prompt":"hi"}', '{"task":"do it"}']) {
      const w = await s.create(def({ triggerType: 'manual', triggerConfig: '', workflowJson: json }));
      await s.settled((await s.trigger('7', w.workflowId, `${200 + seq}`)).runId);
    }
    expect(asked).toEqual([{ type: 'claude' }, { type: 'claude' }]);
    // A sandbox created for no harness leaves the choice to the sidecar, as prompt does.
    metadata['sbx-wf'] = { agent_identifier: 'default' };
    const w = await s.create(
      def({ triggerType: 'manual', triggerConfig: '', workflowJson: '{"prompt":"x"}' }),
    );
    await s.settled((await s.trigger('7', w.workflowId, '300')).runId);
    expect(asked[2]).toBeUndefined();
  });
});

describe('the scheduler loop', () => {
  it('fires on a real timer at the minute boundary (clock shifted to 150 ms before it)', async () => {
    const s = service(store, { now: T0 });
    const boundary = Math.ceil((Date.now() + 1_000) / MIN) * MIN;
    const shift = boundary - 150 - Date.now();
    const clock = { ...realClock, now: () => Date.now() + shift };
    const w = await s.create({ ...def(), triggerConfig: '* * * * *' });
    // create() used the service's own clock (T0); put the next slot at the shifted boundary.
    await s.workflows.put(`7:${w.workflowId}`, { ...w, nextDueAt: boundary });
    const fired = new Promise<number>((resolve) => {
      const sched = new WorkflowScheduler(s, silent, clock, 30_000, (runs) => {
        if (runs.some((r) => r.workflowId === w.workflowId)) {
          resolve(clock.now());
          void sched.stop();
        }
      });
      sched.start();
    });
    const at = await fired;
    expect(at).toBeGreaterThanOrEqual(boundary);
    await s.idle();
    expect((await s.runs('7', w.workflowId))[0]).toMatchObject({ slotAt: boundary, status: 'completed' });
  });
});
