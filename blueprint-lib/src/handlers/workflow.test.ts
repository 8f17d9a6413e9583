// Jobs 2–4 on the devnet and Docker: the operator holding the target sandbox stores the workflow,
// runs its command on trigger (output kept in the encrypted store, never in the result), fires a
// cron workflow at its slot (the scheduler's clock is the test's), cancels it for good; refuses
// fields it cannot honour and other wallets.
import {
  createApiSidecars,
  type EncryptedStore,
  RunLog,
  RunService,
  type SandboxManager,
  WorkflowService,
} from '@agent-sandbox/runtime';
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import pino from 'pino';
import { type Address, encodeAbiParameters, type Hex, toFunctionSelector } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from '../blueprint-router.ts';
import { BlueprintChain } from '../chain.ts';
import type { BlueprintDeps } from '../deps.ts';
import {
  JOB_SANDBOX_CREATE,
  JOB_WORKFLOW_CANCEL,
  JOB_WORKFLOW_CREATE,
  JOB_WORKFLOW_TRIGGER,
  JSON_OUTPUT,
  SANDBOX_CREATE_OUTPUT,
  WORKFLOW_CREATE_INPUT,
  WORKFLOW_ID_INPUT,
} from '../jobs.ts';
import { testCreateInput } from '../testing/create-input.ts';
import { DevnetJobs } from '../testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `blwf-${Date.now().toString(36)}`;

let jobs: DevnetJobs;
let mine: TestRuntime;
let theirs: TestRuntime;
let store: EncryptedStore;
let manager: SandboxManager;
let otherStore: EncryptedStore;
let otherManager: SandboxManager;

/** The scheduler's clock in these tests. */
const clock = { now: Date.now() };
const silent = pino({ level: 'silent' });
const services = new Map<unknown, WorkflowService>();

function router(
  operator: Address,
  own: { store: EncryptedStore; manager: SandboxManager } = { store, manager },
) {
  const sidecars = createApiSidecars({ sidecarEndpoint: (id: string) => own.manager.sidecarEndpoint(id) });
  const runLog = new RunLog(own.store);
  const workflows = new WorkflowService({
    store: own.store,
    sidecars,
    runs: new RunService(runLog, sidecars, silent),
    runLog,
    logger: silent,
    now: () => clock.now,
  });
  const deps: BlueprintDeps = {
    operator,
    mode: 'cloud',
    chain: new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud }),
    sandboxes: own.manager,
    store: own.store,
    policy: {
      defaultImage: image,
      imageAllowlist: [],
      shapes: {
        presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
        defaultPreset: 'default',
        ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
      },
      teeAvailable: false,
    },
    operatorApiUrl: 'http://127.0.0.1:9999',
    workflows,
  };
  const r = blueprintRouter(deps);
  services.set(r, workflows);
  return r;
}
const wfOf = (r: ReturnType<typeof router>) => services.get(r)!;

const ctx = (
  call: { callId: bigint; blockNumber: bigint; transactionHash: Hex },
  jobIndex: number,
): JobContext => ({
  serviceId: jobs.serviceId,
  callId: call.callId,
  jobIndex,
  caller: jobs.caller.address,
  blockNumber: call.blockNumber,
  transactionHash: call.transactionHash,
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

async function run(r: ReturnType<typeof router>, jobIndex: number, input: Hex, post = true) {
  const call = await jobs.submit(jobIndex, input);
  const outcome = await r.router.dispatch({ jobIndex, input }, ctx(call, jobIndex));
  if (outcome.kind !== 'result') return { call, outcome, json: undefined };
  if (post) await jobs.submitResult(opOf.get(r) as Address, call.callId, outcome.output);
  return {
    call,
    outcome,
    json: JSON.parse(decodeJobResult(JSON_OUTPUT, outcome.output).json) as Record<string, unknown>,
  };
}
const opOf = new Map<ReturnType<typeof router>, Address>();

/** Dispatches a submitted call to `r` and posts its result as `operator`; the result's bytes. */
async function answer(
  r: ReturnType<typeof router>,
  operator: Address,
  call: Awaited<ReturnType<DevnetJobs['submit']>>,
  jobIndex: number,
  input: Hex,
): Promise<Hex> {
  const o = await r.router.dispatch({ jobIndex, input }, ctx(call, jobIndex));
  if (o.kind !== 'result') throw new Error(`job ${jobIndex} did not answer: ${JSON.stringify(o)}`);
  await jobs.submitResult(operator, call.callId, o.output);
  return o.output;
}

/** Dispatches a job to `r` as `c` describes (a submitted call or a forged one) and returns its answer's JSON; throws if it skipped. */
async function answerJson(r: ReturnType<typeof router>, jobIndex: number, input: Hex, c: JobContext) {
  const o = await r.router.dispatch({ jobIndex, input }, c);
  if (o.kind !== 'result') throw new Error(`job ${jobIndex} did not answer: ${JSON.stringify(o)}`);
  return decodeJobResult(JSON_OUTPUT, o.output).json;
}

/** The context of a call the chain never saw (as a contract bug would let through), dated at `at`. */
const forgedCtx = (callId: bigint, at: { blockNumber: bigint; transactionHash: Hex }, jobIndex: number) =>
  ctx({ callId, blockNumber: at.blockNumber, transactionHash: at.transactionHash }, jobIndex);

/** Job 2's input for a manual workflow on `sandboxId` of this service. */
const manualWorkflow = (name: string, config: string, sandboxId: string) =>
  encodeAbiParameters(WORKFLOW_CREATE_INPUT, [name, config, 'manual', '', '', 0, sandboxId, 0n]);

/** A sandbox on chain (job 0 submitted, answered and posted), held by the operator it was assigned to. */
async function sandboxOnChain(name: string) {
  const input = testCreateInput({ name });
  const call = await jobs.submit(JOB_SANDBOX_CREATE, input);
  const me = call.operator!;
  const mine = router(me);
  opOf.set(mine, me);
  const sandboxId = decodeJobResult(
    SANDBOX_CREATE_OUTPUT,
    await answer(mine, me, call, JOB_SANDBOX_CREATE, input),
  ).sandboxId;
  return { me, mine, sandboxId, sbCall: call };
}

beforeAll(async () => {
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  mine = await openTestRuntime({ operatorId: RUN, image });
  ({ store, manager } = mine);
  // The other operator: its own store and runtime, as on its own machine.
  theirs = await openTestRuntime({ operatorId: `${RUN}-other`, image });
  ({ store: otherStore, manager: otherManager } = theirs);
});

afterAll(async () => {
  await mine?.close();
  await theirs?.close();
});

describe('workflow jobs', () => {
  it('create, trigger (exec in the sandbox), cancel — answered by the sandbox holder, skipped by the other', async () => {
    // A sandbox on chain, held by the assigned operator.
    const { me, mine, sandboxId } = await sandboxOnChain('wf');
    const other = router(jobs.otherOperator(me), { store: otherStore, manager: otherManager });

    const wfIn = manualWorkflow(
      'nightly',
      JSON.stringify({ command: 'echo secret-output-$((6*7))' }),
      sandboxId,
    );
    const wfCall = await jobs.submit(JOB_WORKFLOW_CREATE, wfIn);
    // The non-holder skips (its own view: it does not hold the sandbox; the chain names the holder).
    const skipped = await other.router.dispatch({ jobIndex: 2, input: wfIn }, ctx(wfCall, 2));
    expect(skipped).toEqual({ kind: 'skip', reason: 'handler-skipped' });
    const wfJson = JSON.parse(decodeJobResult(JSON_OUTPUT, await answer(mine, me, wfCall, 2, wfIn)).json);
    expect(wfJson).toMatchObject({ workflowId: `${wfCall.callId}`, stored: true, trigger: 'manual' });
    const stored = await wfOf(mine).get(`${jobs.serviceId}`, `${wfCall.callId}`);
    expect(stored).toMatchObject({ name: 'nightly', targetSandboxId: sandboxId, active: true });

    const idIn = encodeAbiParameters(WORKFLOW_ID_INPUT, [wfCall.callId]);
    const trig = await run(mine, JOB_WORKFLOW_TRIGGER, idIn);
    expect(trig.json).toMatchObject({ workflowId: `${wfCall.callId}`, triggered: true, status: 'running' });
    // Command output stays off chain, in the encrypted store.
    expect(JSON.stringify(trig.json)).not.toContain('secret-output');
    const done = await wfOf(mine).settled(trig.json?.['runId'] as string);
    expect(done).toMatchObject({ status: 'completed', exitCode: 0, callId: `${trig.call.callId}` });
    expect(done?.stdout).toContain('secret-output-42');

    const cancel = await run(mine, JOB_WORKFLOW_CANCEL, idIn);
    expect(cancel.json).toMatchObject({ workflowId: `${wfCall.callId}`, canceled: true, active: false });
    expect((await wfOf(mine).get(`${jobs.serviceId}`, `${wfCall.callId}`))?.active).toBe(false);

    // A create the holder refused still settles on chain (any result records it): its trigger and
    // cancel are answered with a failure, never "triggered" or "canceled"; the non-holder skips.
    const bad = await run(mine, JOB_WORKFLOW_CREATE, manualWorkflow('refused', '{"bogus":1}', sandboxId));
    expect(bad.json).toMatchObject({ code: 'INVALID_REQUEST' });
    const badId = encodeAbiParameters(WORKFLOW_ID_INPUT, [bad.call.callId]);
    for (const job of [JOB_WORKFLOW_TRIGGER, JOB_WORKFLOW_CANCEL]) {
      const call = await jobs.submit(job, badId);
      expect(await other.router.dispatch({ jobIndex: job, input: badId }, ctx(call, job))).toEqual({
        kind: 'skip',
        reason: 'handler-skipped',
      });
      expect(JSON.parse(await answerJson(mine, job, badId, ctx(call, job)))).toMatchObject({
        code: 'NOT_FOUND',
        error: expect.stringMatching(/not stored on this operator.*create it again/),
      });
    }
  });

  it('a second account never reaches another user’s sandbox: refused on chain, refused again by the handler, the command never runs', async () => {
    const { me, mine, sandboxId, sbCall } = await sandboxOnChain('victim');
    expect(sandboxId).not.toBe('');

    const attacker = await jobs.addCaller();
    const marker = `/tmp/pwned-${RUN}`;
    const steal = manualWorkflow('steal', JSON.stringify({ command: `env > ${marker}` }), sandboxId);
    // On chain: the blueprint reverts the submission (NotSandboxOwner), so no job exists.
    const notOwner = toFunctionSelector('NotSandboxOwner(address,address)').slice(2);
    await expect(jobs.submit(JOB_WORKFLOW_CREATE, steal, attacker)).rejects.toThrow(
      new RegExp(notOwner, 'i'),
    );
    // Off chain: had a contract bug let it through, the holder's handler refuses it as well.
    const asAttacker = (callId: bigint, jobIndex: number): JobContext => ({
      ...forgedCtx(callId, sbCall, jobIndex),
      caller: attacker.address,
    });
    const forged = await answerJson(mine, 2, steal, asAttacker(1_000_000n, 2));
    expect(JSON.parse(forged)).toMatchObject({ code: 'FORBIDDEN' });
    expect(await wfOf(mine).get(`${jobs.serviceId}`, '1000000')).toBeUndefined();

    // The owner's own workflow: the attacker can neither trigger nor cancel it, on chain or off.
    const own = manualWorkflow('own', JSON.stringify({ command: `env > ${marker}` }), sandboxId);
    const wfCall = await jobs.submit(JOB_WORKFLOW_CREATE, own);
    await answer(mine, me, wfCall, 2, own);
    const idIn = encodeAbiParameters(WORKFLOW_ID_INPUT, [wfCall.callId]);
    const notWfOwner = toFunctionSelector('NotWorkflowOwner(address,address)').slice(2);
    await expect(jobs.submit(JOB_WORKFLOW_TRIGGER, idIn, attacker)).rejects.toThrow(
      new RegExp(notWfOwner, 'i'),
    );
    await expect(jobs.submit(JOB_WORKFLOW_CANCEL, idIn, attacker)).rejects.toThrow(
      new RegExp(notWfOwner, 'i'),
    );
    for (const [job, callId] of [
      [JOB_WORKFLOW_TRIGGER, 1_000_001n],
      [JOB_WORKFLOW_CANCEL, 1_000_002n],
    ] as const) {
      expect(JSON.parse(await answerJson(mine, job, idIn, asAttacker(callId, job)))).toMatchObject({
        code: 'FORBIDDEN',
      });
    }
    expect((await wfOf(mine).get(`${jobs.serviceId}`, `${wfCall.callId}`))?.active).toBe(true);
    expect(await wfOf(mine).runs(`${jobs.serviceId}`, `${wfCall.callId}`)).toEqual([]);

    // Nothing ran: the command's marker file is absent from the victim's sandbox.
    const sidecars = createApiSidecars({ sidecarEndpoint: (id: string) => manager.sidecarEndpoint(id) });
    const probe = await (await sidecars.client(sandboxId)).exec({ command: `test -e ${marker}; echo $?` });
    expect(probe.stdout.trim()).toBe('1');
  });

  it('a cron workflow fires at its one-minute slot (test clock), a canceled one never again; fields it cannot honour are refused', async () => {
    const { mine, sandboxId, sbCall } = await sandboxOnChain('cron');
    const wfInput = (over: { trigger?: string; config?: string; sandboxConfig?: string; service?: bigint }) =>
      encodeAbiParameters(WORKFLOW_CREATE_INPUT, [
        'every-minute',
        JSON.stringify({ command: 'date +%s >> ticks; wc -l < ticks' }),
        over.trigger ?? 'cron',
        over.config ?? '{"cron":"* * * * *","timezone":"UTC"}',
        over.sandboxConfig ?? '',
        0,
        sandboxId,
        over.service ?? 0n,
      ]);
    // Refused with a reason, never silently ignored.
    for (const [input, reason] of [
      [wfInput({ sandboxConfig: '{"image":"other"}' }), /sandbox_config_json is not supported/],
      [wfInput({ config: '*/5 * * * * *' }), /exactly 5 fields/],
      [wfInput({ trigger: 'webhook' }), /"manual" or "cron"/],
    ] as const) {
      const r = await run(mine, JOB_WORKFLOW_CREATE, input);
      expect(r.json).toMatchObject({ code: 'INVALID_REQUEST', phase: 'workflow_create' });
      expect(String(r.json?.['error'])).toMatch(reason);
    }

    // Another service: the blueprint reverts the submission; the handler refuses it as well.
    const elsewhere = wfInput({ service: jobs.serviceId + 1000n });
    await expect(jobs.submit(JOB_WORKFLOW_CREATE, elsewhere)).rejects.toThrow();
    const forgedCreate = await answerJson(
      mine,
      JOB_WORKFLOW_CREATE,
      elsewhere,
      forgedCtx(2_000_001n, sbCall, 2),
    );
    expect(forgedCreate).toMatch(/target_service_id .* is another service/);

    const t0 = Date.parse('2026-05-01T12:00:10Z');
    clock.now = t0;
    const wf = await run(mine, JOB_WORKFLOW_CREATE, wfInput({ service: jobs.serviceId }));
    const id = wf.json?.['workflowId'] as string;
    expect(wf.json).toMatchObject({
      stored: true,
      trigger: 'cron',
      nextDueAt: Date.parse('2026-05-01T12:01:00Z'),
    });
    const svc = wfOf(mine);
    expect(await svc.tick(t0 + 49_000)).toEqual([]);
    const [fired] = await svc.tick(Date.parse('2026-05-01T12:01:00Z'));
    expect(fired).toMatchObject({ workflowId: id, trigger: 'cron', sandboxId });
    expect(await svc.settled(fired!.runId)).toMatchObject({ status: 'completed', stdout: '1\n' });

    const idIn = encodeAbiParameters(WORKFLOW_ID_INPUT, [BigInt(id)]);
    expect((await run(mine, JOB_WORKFLOW_CANCEL, idIn)).json).toMatchObject({ canceled: true });
    for (let m = 2; m <= 6; m++) expect(await svc.tick(t0 + m * 60_000)).toEqual([]);
    // Triggering a canceled workflow is refused on chain (inactive); the handler refuses it too.
    const forged = await answerJson(mine, JOB_WORKFLOW_TRIGGER, idIn, forgedCtx(2_000_000n, sbCall, 3));
    expect(forged).toMatch(/canceled/);
    expect((await svc.runs(`${jobs.serviceId}`, id)).length).toBe(1);
    const probe = await (
      await createApiSidecars({ sidecarEndpoint: (x: string) => manager.sidecarEndpoint(x) }).client(
        sandboxId,
      )
    ).exec({ command: 'wc -l < ticks' });
    expect(probe.stdout.trim()).toBe('1');
  });
});
