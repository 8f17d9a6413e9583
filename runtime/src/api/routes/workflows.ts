// The owner's workflows and their runs: GET /api/workflows, /api/workflows/{id} and
// /api/workflows/{id}/runs (session required; another wallet's workflow answers 403, as another
// wallet's sandbox does; a session scoped to a sandbox sees only workflows targeting it).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { sameAddress, scopeAllows } from '../../auth/index.ts';
import { RuntimeError } from '../../errors.ts';
import { runView, type WorkflowRecord, workflowView } from '../../workflows/records.ts';
import type { WorkflowService } from '../../workflows/workflow-service.ts';
import type { ApiEnv } from '../context.ts';
import { errors, json } from '../schemas.ts';

const WorkflowSchema = z
  .object({
    workflow_id: z.string(),
    service_id: z.string(),
    owner: z.string(),
    name: z.string(),
    workflow_json: z.string(),
    trigger_type: z.string(),
    trigger_config: z.string(),
    target_kind: z.enum(['sandbox', 'instance']),
    target_sandbox_id: z.string(),
    active: z.boolean(),
    created_at: z.number(),
    updated_at: z.number(),
    last_triggered_at: z.number().nullable(),
    next_due_at: z.number().nullable().openapi({ description: 'cron: the next slot (epoch ms)' }),
    runs: z.number().int(),
  })
  .openapi('Workflow');

const WorkflowRunSchema = z
  .object({
    run_id: z.string(),
    workflow_id: z.string(),
    trigger: z.enum(['manual', 'cron']),
    call_id: z.string().nullable(),
    slot_at: z.number().nullable(),
    missed_slots: z.number().int().openapi({ description: 'cron slots passed over (operator down)' }),
    kind: z.enum(['command', 'prompt', 'task']),
    sandbox_id: z.string().nullable(),
    status: z.enum(['running', 'completed', 'failed', 'timed_out', 'skipped', 'cancelled']),
    started_at: z.number(),
    finished_at: z.number().nullable(),
    exit_code: z.number().int().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    agent_run_id: z.string().nullable().openapi({
      description: 'prompt/task: events at /api/sandboxes/{sandbox_id}/runs/{agent_run_id}/events',
    }),
    final_text: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .openapi('WorkflowRun');

const IdParams = z.object({
  id: z
    .string()
    .regex(/^[0-9]{1,20}$/)
    .openapi({ param: { name: 'id', in: 'path' }, example: '12' }),
});

const listRoute = createRoute({
  method: 'get',
  path: '/api/workflows',
  tags: ['workflows'],
  summary: "The caller's workflows on this operator",
  security: [{ bearer: [] }],
  responses: {
    200: json(z.object({ workflows: z.array(WorkflowSchema) }), 'Workflows'),
    ...errors(401, 429),
  },
});

const getRoute = createRoute({
  method: 'get',
  path: '/api/workflows/{id}',
  tags: ['workflows'],
  summary: 'One workflow (owner only)',
  security: [{ bearer: [] }],
  request: { params: IdParams },
  responses: { 200: json(WorkflowSchema, 'The workflow'), ...errors(400, 401, 403, 404, 429) },
});

const runsRoute = createRoute({
  method: 'get',
  path: '/api/workflows/{id}/runs',
  tags: ['workflows'],
  summary: "A workflow's runs, newest first: status, exit code and output or the agent run id, timestamps",
  security: [{ bearer: [] }],
  request: {
    params: IdParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(100).optional() }),
  },
  responses: {
    200: json(z.object({ runs: z.array(WorkflowRunSchema) }), 'Runs'),
    ...errors(400, 401, 403, 404, 429),
  },
});

/** Registered on the main app, behind the session middleware. */
export function registerWorkflows(app: OpenAPIHono<ApiEnv>, workflows: WorkflowService): void {
  const visible = (s: ApiEnv['Variables']['session'], w: WorkflowRecord) =>
    sameAddress(s.address, w.owner) &&
    scopeAllows({ address: s.address, scope: s.scope ?? undefined }, w.targetSandboxId);
  const owned = async (s: ApiEnv['Variables']['session'], id: string) => {
    const [w] = await workflows.workflows.find((x) => x.workflowId === id);
    if (!w) throw new RuntimeError('NOT_FOUND', `workflow ${id} is not on this operator`);
    if (!visible(s, w)) {
      throw new RuntimeError('FORBIDDEN', 'this workflow belongs to another wallet; sign in with its owner');
    }
    return w;
  };
  app.openapi(listRoute, async (c) => {
    const s = c.get('session');
    const mine = (await workflows.list(s.address)).filter((w) => visible(s, w));
    return c.json({ workflows: mine.map(workflowView) }, 200);
  });
  app.openapi(getRoute, async (c) => {
    const w = await owned(c.get('session'), c.req.valid('param').id);
    return c.json(workflowView(w), 200);
  });
  app.openapi(runsRoute, async (c) => {
    const w = await owned(c.get('session'), c.req.valid('param').id);
    const runs = await workflows.runs(w.serviceId, w.workflowId, c.req.valid('query').limit ?? 50);
    return c.json({ runs: runs.map(runView) }, 200);
  });
}
