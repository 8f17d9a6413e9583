// `agent-sandbox workflow create|list|runs|trigger|cancel`: create, trigger and cancel are jobs 2/3/4
// from the owner's account (the result is awaited on chain); list and runs read the operator API.
// Under `--instance S` they address service S's instance (its jobs, the operators it reported).
import { ClientError, ExitCode } from '../errors.ts';
import {
  decodeWorkflowResult,
  encodeWorkflowCreate,
  encodeWorkflowId,
  JOB_WORKFLOW_CANCEL,
  JOB_WORKFLOW_CREATE,
  JOB_WORKFLOW_TRIGGER,
  type WorkflowRun,
} from '../workflows.ts';
import type { Command } from './commands.ts';
import type { CliContext } from './context.ts';

const str = (ctx: CliContext, flag: string) => {
  const v = ctx.args.options[flag];
  return typeof v === 'string' ? v : undefined;
};

function workflowId(ctx: CliContext): bigint {
  const v = ctx.args.positionals[1];
  if (!v || !/^\d{1,20}$/.test(v))
    throw new ClientError(
      'USAGE',
      'give the workflow id (a number, from `workflow create` or `workflow list`)',
    );
  return BigInt(v);
}

/** The workflow_json from --command / --prompt / --task / --workflow-json (exactly one). */
function workflowJson(ctx: CliContext): string {
  const given = (['command', 'prompt', 'task', 'workflow-json'] as const).filter(
    (k) => str(ctx, k) !== undefined,
  );
  if (given.length !== 1) {
    throw new ClientError(
      'USAGE',
      'give exactly one of --command CMD, --prompt TEXT, --task TEXT or --workflow-json JSON',
    );
  }
  const k = given[0]!;
  if (k === 'workflow-json') return str(ctx, k)!;
  const timeout = str(ctx, 'timeout');
  if (timeout !== undefined && !/^\d+$/.test(timeout))
    throw new ClientError('USAGE', '--timeout is whole seconds');
  return JSON.stringify({ [k]: str(ctx, k), ...(timeout ? { timeout_ms: Number(timeout) * 1000 } : {}) });
}

/** Submits a workflow job and waits for its result; an operator refusal exits REMOTE with its reason. */
async function job(ctx: CliContext, jobIndex: number, input: `0x${string}`, what: string) {
  await ctx.requireAccount(`workflow ${what}`);
  const instance = ctx.instanceService();
  const chain = instance === undefined ? await ctx.chain() : await ctx.instanceChain(instance);
  const submitted = await chain.submitJob(jobIndex, input);
  ctx.note(`${what} job submitted: call ${submitted.callId} (tx ${submitted.txHash})`);
  const r = await chain.waitForResult(submitted.callId, {
    fromBlock: submitted.blockNumber,
    timeoutMs: 300_000,
    signal: ctx.io.signal,
  });
  const result = decodeWorkflowResult(r.output);
  if (typeof result['error'] === 'string') {
    throw new ClientError('REMOTE', `the operator refused the workflow ${what}: ${result['error']}`, {
      details: { callId: submitted.callId.toString(), code: result['code'] },
    });
  }
  return { callId: submitted.callId, txHash: submitted.txHash, operator: r.operator, result };
}

async function create(ctx: CliContext): Promise<number> {
  const instance = ctx.instanceService() !== undefined;
  const sandboxId = ctx.args.positionals[1] ?? '';
  if (!instance && !sandboxId)
    throw new ClientError('USAGE', 'give the sandbox the workflow runs in (or --instance SERVICE_ID)');
  if (instance && sandboxId)
    throw new ClientError(
      'USAGE',
      `an instance workflow runs in the service's one sandbox: drop "${sandboxId}" or --instance`,
    );
  const cron = str(ctx, 'cron');
  const tz = str(ctx, 'timezone');
  if (tz !== undefined && cron === undefined) throw new ClientError('USAGE', '--timezone goes with --cron');
  const input = encodeWorkflowCreate({
    name: str(ctx, 'name') ?? 'workflow',
    workflowJson: workflowJson(ctx),
    triggerType: cron === undefined ? 'manual' : 'cron',
    triggerConfig: cron === undefined ? '' : JSON.stringify({ cron, timezone: tz ?? 'UTC' }),
    targetSandboxId: sandboxId,
    instance,
  });
  const r = await job(ctx, JOB_WORKFLOW_CREATE, input, 'create');
  if (ctx.json) ctx.printJson({ workflow_id: r.callId.toString(), tx_hash: r.txHash, result: r.result });
  else {
    const next =
      typeof r.result['nextDueAt'] === 'number'
        ? ` (next run ${new Date(r.result['nextDueAt']).toISOString()})`
        : '';
    ctx.out(`${r.callId}${next}`);
  }
  return ExitCode.OK;
}

async function simple(ctx: CliContext, jobIndex: number, what: 'trigger' | 'cancel'): Promise<number> {
  const id = workflowId(ctx);
  const r = await job(ctx, jobIndex, encodeWorkflowId(id), what);
  if (ctx.json)
    ctx.printJson({
      workflow_id: id.toString(),
      call_id: r.callId.toString(),
      tx_hash: r.txHash,
      result: r.result,
    });
  else if (what === 'trigger') ctx.out(`${r.result['runId'] ?? ''}\t${r.result['status'] ?? ''}`);
  else ctx.out(`canceled workflow ${id}`);
  return ExitCode.OK;
}

/** The operators to ask: under --instance the one serving it, else the service's (or --operator). */
async function operatorUrls(ctx: CliContext): Promise<string[]> {
  const instance = ctx.instanceService();
  return instance === undefined ? ctx.operatorUrls() : [await ctx.instanceOperatorUrl(instance)];
}

async function list(ctx: CliContext): Promise<number> {
  const all = [];
  for (const url of await operatorUrls(ctx)) {
    const client = await ctx.operatorAt(url);
    for (const w of await client.workflows()) all.push({ ...w, operator_url: client.baseUrl });
  }
  if (ctx.json) ctx.printJson(all);
  else if (all.length === 0) ctx.note('no workflows');
  else
    for (const w of all) {
      const when = w.trigger_type === 'cron' ? `cron ${w.trigger_config}` : 'manual';
      ctx.out(
        `${w.workflow_id}\t${w.name}\t${w.active ? 'active' : 'canceled'}\t${when}\t${w.target_sandbox_id || 'instance'}\truns ${w.runs}`,
      );
    }
  return ExitCode.OK;
}

const runLine = (r: WorkflowRun) =>
  [
    r.run_id,
    new Date(r.started_at).toISOString(),
    r.trigger,
    r.status,
    r.exit_code === null ? (r.agent_run_id ?? '-') : `exit ${r.exit_code}`,
    r.error ? r.error.message : '',
  ].join('\t');

async function runs(ctx: CliContext): Promise<number> {
  const id = workflowId(ctx);
  const limit = Number(str(ctx, 'limit') ?? '20');
  let lastError: unknown;
  // The workflow lives on the operator holding its sandbox: ask each until one knows it.
  for (const url of await operatorUrls(ctx)) {
    try {
      const rs = await (await ctx.operatorAt(url)).workflowRuns(id, limit);
      if (ctx.json) ctx.printJson(rs);
      else if (rs.length === 0) ctx.note(`workflow ${id} has not run yet`);
      else
        for (const r of rs) {
          ctx.out(runLine(r));
          if (ctx.args.options['output'] && r.stdout) ctx.out(r.stdout.trimEnd());
        }
      return ExitCode.OK;
    } catch (e) {
      if (!(e instanceof ClientError) || e.code !== 'NOT_FOUND') throw e;
      lastError = e;
    }
  }
  throw lastError ?? new ClientError('NOT_FOUND', `workflow ${id} is not on any operator of this service`);
}

export const workflow: Command = async (ctx) => {
  const action = ctx.args.positionals[0];
  switch (action) {
    case 'create':
      return create(ctx);
    case 'list':
      return list(ctx);
    case 'runs':
      return runs(ctx);
    case 'trigger':
      return simple(ctx, JOB_WORKFLOW_TRIGGER, 'trigger');
    case 'cancel':
      return simple(ctx, JOB_WORKFLOW_CANCEL, 'cancel');
    default:
      throw new ClientError('USAGE', `workflow ${action ?? ''}: use create, list, runs, trigger or cancel`);
  }
};
