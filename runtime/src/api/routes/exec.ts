// Running one command in a sandbox through its sidecar.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { ApiEnv } from '../context.ts';
import { assertRunning } from '../middleware/session.ts';
import { ExecRequestSchema, ExecResultSchema, errors, json, jsonBody, SANDBOX_ERRORS } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const execRoute = createRoute({
  method: 'post',
  path: '/exec',
  tags: ['sandbox'],
  summary: 'Run a command (as the agent user, in the workspace)',
  security: [{ bearer: [] }],
  request: { body: jsonBody(ExecRequestSchema) },
  responses: {
    200: json(ExecResultSchema, 'Exit code and output (a non-zero exit is still 200)'),
    ...errors(400, ...SANDBOX_ERRORS, 409, 413, 502, 503, 504),
  },
});

export function registerExec(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(execRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const body = c.req.valid('json');
    const client = await d.sidecars.client(record.id);
    const r = await client.exec(
      { command: body.command, cwd: body.cwd, env: body.env, timeoutMs: body.timeout_ms },
      // The client's exec timeout applies, stretched past timeout_ms so the sidecar's exit 124 arrives.
      { requestId: c.get('requestId') },
    );
    return c.json({ exit_code: r.exitCode, stdout: r.stdout, stderr: r.stderr }, 200);
  });
}
