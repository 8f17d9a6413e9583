// GET …/capabilities: what this sandbox can do for an agent-environment client, read before it
// offers an operation. Every flag is backed by the routes of this operator (a test drives them);
// a flag that is not true is absent, never false or guessed: no interactions here, and no
// harness list when the sandbox's sidecar could not be asked.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { runtimeOf, SANDBOX_RUNTIMES } from '../../sandbox/runtimes.ts';
import type { ApiEnv } from '../context.ts';
import { assertRunning } from '../middleware/session.ts';
import { MAX_FRAME_BYTES } from '../runs/frames.ts';
import { errors, json, PromptRequestSchema, SANDBOX_ERRORS, TaskRequestSchema } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

export const SandboxCapabilitiesSchema = z
  .object({
    sandbox_id: z.string(),
    version: z.literal(1),
    harnesses: z.array(z.string()).optional().openapi({
      description: 'Harness CLIs found in this sandbox (absent when the sidecar could not be asked)',
    }),
    agent: z.boolean().openapi({
      description:
        'false: plain compute (created with agent: false): no coding agent; prompt and task answer 409 AGENT_DISABLED',
    }),
    runtime: z.enum(SANDBOX_RUNTIMES).openapi({
      description: 'The OCI runtime the sandbox runs under: runc, or runsc (gVisor, a user-space kernel)',
    }),
    agent_command: z.literal(true).optional().openapi({
      description: "Present when the user's agent program (SANDBOX_AGENT_COMMAND) answers every turn",
    }),
    dispatch: z.object({ runControlRef: z.literal(true), executionIdOnAdmission: z.literal(true) }),
    runs: z.object({ eventReplay: z.literal(true), executionScopedStatus: z.literal(true) }),
    cancel: z.object({
      canonicalRunCancellation: z.literal(true),
      digestBound: z.literal(true),
      idempotent: z.literal(true),
    }),
    streaming: z.object({
      detach: z.literal(true),
      replay: z.literal(true),
      turnIdempotency: z.literal(true),
      replayCursor: z.literal('exclusive'),
      maxFrameBytes: z.number().int(),
      oversizeFrames: z.literal('split-text-deltas-truncate-others'),
    }),
    usage: z.object({ terminalReceipt: z.literal(true), usageMode: z.literal('cumulative') }),
    idempotency: z.object({
      header: z.literal('Idempotency-Key'),
      body_field: z.literal('idempotency_key'),
      scope: z.literal('sandbox+owner'),
      digest: z.literal('sha256'),
    }),
    turn_options: z.object({ prompt: z.array(z.string()), task: z.array(z.string()) }),
  })
  .openapi('SandboxCapabilities');

type SandboxCapabilities = z.infer<typeof SandboxCapabilitiesSchema>;

const route = createRoute({
  method: 'get',
  path: '/capabilities',
  tags: ['runs'],
  summary: "This sandbox's capability document (harnesses, replay, detach, idempotent turns and cancel)",
  security: [{ bearer: [] }],
  responses: {
    200: json(SandboxCapabilitiesSchema, 'The capability document'),
    ...errors(...SANDBOX_ERRORS, 409),
  },
});

/** What the sidecar says about its agents; undefined when it could not be read. */
async function agents(d: SandboxRouteDeps, sandboxId: string, requestId: string) {
  try {
    const r = (await (await d.sidecars.client(sandboxId)).listAgents({ requestId })) as {
      installed?: unknown;
      agentCommand?: unknown;
    };
    const installed = Array.isArray(r.installed)
      ? r.installed.filter((h): h is string => typeof h === 'string')
      : undefined;
    return { installed, agentCommand: r.agentCommand === true };
  } catch {
    return undefined;
  }
}

export function registerCapabilities(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(route, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const plain = record.agent === false;
    const a = plain ? undefined : await agents(d, record.id, c.get('requestId'));
    const doc: SandboxCapabilities = {
      sandbox_id: record.id,
      version: 1,
      agent: !plain,
      runtime: runtimeOf(record),
      ...(a?.installed ? { harnesses: a.installed } : {}),
      ...(a?.agentCommand ? { agent_command: true as const } : {}),
      // The run id is in the 202 of prompt/task, before the agent has produced anything.
      dispatch: { runControlRef: true, executionIdOnAdmission: true },
      runs: { eventReplay: true, executionScopedStatus: true },
      // Cancel names the run by id, and optionally by its admitted request digest (else 409).
      cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
      streaming: {
        detach: true,
        replay: true,
        turnIdempotency: true,
        replayCursor: 'exclusive',
        maxFrameBytes: MAX_FRAME_BYTES,
        oversizeFrames: 'split-text-deltas-truncate-others',
      },
      usage: { terminalReceipt: true, usageMode: 'cumulative' },
      idempotency: {
        header: 'Idempotency-Key',
        body_field: 'idempotency_key',
        scope: 'sandbox+owner',
        digest: 'sha256',
      },
      // The very schemas the routes validate with (strict: anything else is a 400).
      turn_options: {
        prompt: Object.keys(PromptRequestSchema.shape),
        task: Object.keys(TaskRequestSchema.shape),
      },
    };
    return c.json(doc, 200);
  });
}
