// Agent runs: prompt and task admit a background run (202 with its run id; with an Idempotency-Key
// a retry of the same request answers 200 with the original run, a changed one 409); its state,
// its event stream (SSE ids `<run_id>:<n>`, Last-Event-ID resumes exclusively after one of this
// run's ids) and an idempotent cancel of exactly that run.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import { assertRunning } from '../middleware/session.ts';
import { runBackend } from '../runs/backend.ts';
import type { Admission } from '../runs/run-service.ts';
import {
  errors,
  IdempotencyKeySchema,
  json,
  jsonBody,
  PromptRequestSchema,
  RunAcceptedSchema,
  RunParamsSchema,
  RunSchema,
  SANDBOX_ERRORS,
  TaskRequestSchema,
} from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const KEEPALIVE_MS = 15_000;

const CancelRequestSchema = z
  .object({
    request_digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .optional()
      .openapi({
        description:
          'The digest the run was admitted with (from its 202); a different one → 409, nothing is cancelled',
      }),
  })
  .strict()
  .openapi('CancelRequest');

// biome-ignore lint/suspicious/noExplicitAny: the prompt and task handlers' contexts differ only in input types
const admitted = (c: any, a: Admission) =>
  c.json(
    {
      run_id: a.run.run_id,
      session_id: a.run.session_id,
      status: a.run.status,
      request_digest: a.run.request_digest ?? '',
      ...(a.replayed ? { replayed: true } : {}),
    },
    a.replayed ? 200 : 202,
  );

const accepted = {
  202: json(RunAcceptedSchema, 'Run admitted (queued); follow it at …/runs/{run_id}/events'),
  200: json(
    RunAcceptedSchema,
    'The run an earlier request with this Idempotency-Key admitted (`replayed: true`)',
  ),
};

const idempotencyHeaders = z.object({
  'idempotency-key': IdempotencyKeySchema.optional().openapi({
    description:
      'Makes the turn idempotent (scoped to this sandbox and owner): the same key and request return the original run; a changed request → 409 IDEMPOTENCY_CONFLICT naming the original digest',
  }),
});

const promptRoute = createRoute({
  method: 'post',
  path: '/prompt',
  tags: ['runs'],
  summary: 'Send a message to the sandbox agent as a background run (one active run per sandbox)',
  security: [{ bearer: [] }],
  request: { body: jsonBody(PromptRequestSchema), headers: idempotencyHeaders },
  responses: { ...accepted, ...errors(400, ...SANDBOX_ERRORS, 409, 413) },
});

const taskRoute = createRoute({
  method: 'post',
  path: '/task',
  tags: ['runs'],
  summary: 'Give the sandbox agent a task as a background run (30 min budget)',
  security: [{ bearer: [] }],
  request: { body: jsonBody(TaskRequestSchema), headers: idempotencyHeaders },
  responses: { ...accepted, ...errors(400, ...SANDBOX_ERRORS, 409, 413) },
});

const runRoute = createRoute({
  method: 'get',
  path: '/runs/{run_id}',
  tags: ['runs'],
  summary: "A run's state",
  security: [{ bearer: [] }],
  request: { params: RunParamsSchema },
  responses: { 200: json(RunSchema, 'The run'), ...errors(400, ...SANDBOX_ERRORS) },
});

const eventsRoute = createRoute({
  method: 'get',
  path: '/runs/{run_id}/events',
  tags: ['runs'],
  summary:
    "A run's events as SSE (`id: <run_id>:<n>` on each; send Last-Event-ID to resume exclusively after it; an id of another run, or one this run has not issued → 400)",
  security: [{ bearer: [] }],
  request: {
    params: RunParamsSchema,
    headers: z.object({ 'last-event-id': z.string().max(256).optional() }),
    query: z.object({ last_event_id: z.string().max(256).optional() }),
  },
  responses: {
    200: {
      content: { 'text/event-stream': { schema: z.string() } },
      description: 'Event stream, ends with the run',
    },
    ...errors(400, ...SANDBOX_ERRORS),
  },
});

const cancelRoute = createRoute({
  method: 'post',
  path: '/runs/{run_id}/cancel',
  tags: ['runs'],
  summary:
    'Cancel exactly this run; answers once it has ended (a finished run is returned unchanged; cancelling again gives the same answer)',
  security: [{ bearer: [] }],
  request: {
    params: RunParamsSchema,
    body: {
      required: false,
      content: { 'application/json': { schema: CancelRequestSchema } },
    },
  },
  responses: { 200: json(RunSchema, 'The run after cancel'), ...errors(400, ...SANDBOX_ERRORS, 409) },
});

/** The SSE id of a run's event: unique to the run, so it cannot be replayed against another. */
export const eventId = (runId: string, seq: number) => `${runId}:${seq}`;

/** The sequence number in a Last-Event-ID of this run; VALIDATION (400) for any other id. */
function eventSeq(runId: string, lastEventId: string): number {
  const prefix = `${runId}:`;
  const n = lastEventId.startsWith(prefix) ? lastEventId.slice(prefix.length) : '';
  if (!/^\d{1,10}$/.test(n)) {
    throw new RuntimeError(
      'VALIDATION',
      `Last-Event-ID must be an event id of run ${runId} ("${runId}:<n>"); reconnect without it to replay from the start`,
    );
  }
  return Number(n);
}

/** The key from the header or the body; both given and different is a 400. */
function idempotencyKey(header: string | undefined, body: string | undefined): string | undefined {
  if (header !== undefined && body !== undefined && header !== body) {
    throw new RuntimeError(
      'VALIDATION',
      'the Idempotency-Key header and the idempotency_key field differ; send one of them',
    );
  }
  return header ?? body;
}

export function registerRuns(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  const assertAgent = async (r: { id: string; agent?: boolean | undefined }) => {
    // A sandbox this API may not reach (a TEE sandbox, whose enclave takes runs only over the
    // owner channel: 409 saying so) is refused before a run is admitted, not when it starts.
    await d.sandboxes.sidecarEndpoint(r.id);
    if (r.agent === false) {
      throw new RuntimeError(
        'AGENT_DISABLED',
        `sandbox ${r.id} is plain compute (created with agent: false): it has no coding agent; use exec, terminals and files, or create a sandbox with agent: true`,
      );
    }
  };

  // A run of another sandbox is "not found" here, whoever owns it.
  const ownRun = async (sandboxId: string, runId: string) => {
    const run = await d.runs.get(runId);
    if (!run || run.sandbox_id !== sandboxId)
      throw new RuntimeError('NOT_FOUND', `no run ${runId} on this sandbox`);
    return run;
  };

  app.openapi(promptRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    await assertAgent(record);
    const b = c.req.valid('json');
    const a = await d.runs.admit({
      sandboxId: record.id,
      owner: c.get('session').address,
      idempotencyKey: idempotencyKey(c.req.valid('header')['idempotency-key'], b.idempotency_key),
      kind: 'prompt',
      request: {
        message: b.message,
        sessionId: b.session_id,
        backend: runBackend(record.metadata, b.backend_type, b.model),
      },
      timeoutMs: Math.min(b.timeout_ms ?? d.config.timeouts.agent, d.config.timeouts.agent),
      requestId: c.get('requestId'),
    });
    return admitted(c, a);
  });

  app.openapi(taskRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    await assertAgent(record);
    const b = c.req.valid('json');
    const metadata: Record<string, unknown> = { kind: 'task' };
    if (b.max_turns !== undefined) metadata.max_turns = b.max_turns;
    if (b.system_prompt !== undefined) metadata.system_prompt = b.system_prompt;
    const a = await d.runs.admit({
      sandboxId: record.id,
      owner: c.get('session').address,
      idempotencyKey: idempotencyKey(c.req.valid('header')['idempotency-key'], b.idempotency_key),
      kind: 'task',
      request: {
        message: b.prompt,
        sessionId: b.session_id,
        backend: runBackend(record.metadata, b.backend_type, b.model),
        metadata,
      },
      timeoutMs: Math.min(b.timeout_ms ?? d.config.timeouts.task, d.config.timeouts.task),
      requestId: c.get('requestId'),
    });
    return admitted(c, a);
  });

  app.openapi(runRoute, async (c) => {
    const run = await ownRun(c.get('sandbox').id, c.req.valid('param').run_id);
    return c.json(run, 200);
  });

  app.openapi(cancelRoute, async (c) => {
    const sandboxId = c.get('sandbox').id;
    const { run_id } = c.req.valid('param');
    const current = await ownRun(sandboxId, run_id);
    // Digest-bound: a control reference (run id + digest) cancels only the request it admitted.
    const named = c.req.header('content-type')?.includes('json')
      ? c.req.valid('json').request_digest
      : undefined;
    if (named !== undefined && named !== current.request_digest) {
      throw new RuntimeError(
        'CONFLICT',
        `run ${run_id} was admitted with request digest ${current.request_digest ?? '(none recorded)'}, not ${named}; nothing was cancelled`,
        { details: { run_id, request_digest: current.request_digest ?? null } },
      );
    }
    const run = await d.runs.cancel(sandboxId, run_id, c.get('requestId'));
    return c.json(run!, 200);
  });

  app.openapi(eventsRoute, async (c) => {
    const { run_id } = c.req.valid('param');
    const run = await ownRun(c.get('sandbox').id, run_id);
    const given = c.req.valid('header')['last-event-id'] ?? c.req.valid('query').last_event_id;
    const after = given === undefined ? 0 : eventSeq(run_id, given);
    // Ids become visible only once stored, so a cursor past the last one was never issued.
    if (after > run.last_event_id) {
      throw new RuntimeError(
        'VALIDATION',
        `Last-Event-ID ${given} is past run ${run_id}'s last event (${run.last_event_id}); it was not issued by this run — reconnect without it to replay from the start`,
      );
    }
    return streamSSE(c, async (stream) => {
      const abort = new AbortController();
      stream.onAbort(() => abort.abort());
      // A member removed while following the run stops receiving it at once.
      const release = d.live.hold({ sandboxId: c.get('sandbox').id, address: c.get('session').address }, () =>
        abort.abort(),
      );
      const keepalive = setInterval(() => void stream.write(': keep-alive\n\n'), KEEPALIVE_MS);
      try {
        for await (const ev of d.runLog.follow(run_id, after, abort.signal)) {
          await stream.writeSSE({
            id: eventId(run_id, ev.id),
            event: ev.event,
            data: JSON.stringify(ev.data),
          });
        }
      } finally {
        clearInterval(keepalive);
        release();
      }
    }) as never;
  });
}
