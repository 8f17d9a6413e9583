// Stop, resume (both idempotent; members too) and snapshot (owner only) of a sandbox.
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import { assertOwner } from '../middleware/session.ts';
import { errors, json, LifecycleResultSchema, SANDBOX_ERRORS, SnapshotResultSchema } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const lifecycle = (path: '/stop' | '/resume', summary: string) =>
  createRoute({
    method: 'post',
    path,
    tags: ['sandbox'],
    summary,
    security: [{ bearer: [] }],
    responses: {
      200: json(LifecycleResultSchema, 'Done (also when it already was)'),
      ...errors(...SANDBOX_ERRORS, 409, 502, 503),
    },
  });

const stopRoute = lifecycle('/stop', 'Stop the sandbox (workspace kept); idempotent');
const resumeRoute = lifecycle('/resume', 'Resume a stopped sandbox from whichever tier holds it; idempotent');

const snapshotRoute = createRoute({
  method: 'post',
  path: '/snapshot',
  tags: ['sandbox'],
  summary: "Snapshot the sandbox's workspace",
  description:
    "Archives the workspace and commits the container (scrubbed: no env, secret or token in it). `snapshot.snapshotImageId` is the snapshot id: a create job with capabilities_json `{\"from_snapshot\": id}` from the same owner starts a new sandbox with this workspace. A sandbox keeps its latest snapshot only (a stop takes one too); it goes with the sandbox. `snapshot.storage` says where its workspace archive is: `local` (the operator's disk) or `object_store` (the operator's S3-compatible bucket, SNAPSHOT_S3_*, sealed with the operator's key before upload). If the upload fails the answer is 503 SNAPSHOT_STORE_UNAVAILABLE, the snapshot is kept locally, and a retry uploads again.",
  security: [{ bearer: [] }],
  responses: {
    200: json(SnapshotResultSchema, 'Snapshot taken'),
    ...errors(...SANDBOX_ERRORS, 409, 502, 503),
  },
});

function stateOf(result: unknown, fallback: string): string {
  const s = (result as Partial<SandboxRecord> | undefined)?.state;
  return typeof s === 'string' ? s : fallback;
}

// Only facts a client can use; whatever else the manager returns (paths, engine ids) stays inside.
const SNAPSHOT_FIELDS = ['imageId', 'image', 'tag', 'snapshotImageId', 'createdAt', 'sizeBytes', 'storage'];

export function registerLifecycle(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(stopRoute, async (c) => {
    const record = c.get('sandbox');
    if (record.state === 'stopped')
      return c.json({ success: true, sandbox_id: record.id, state: 'stopped' }, 200);
    // A run cannot survive its container; end it as cancelled rather than leave it hanging.
    const active = d.runs.activeRun(record.id);
    if (active) await d.runs.cancel(record.id, active, c.get('requestId'));
    const result = await d.sandboxes.stop(record.id);
    return c.json({ success: true, sandbox_id: record.id, state: stateOf(result, 'stopped') }, 200);
  });

  app.openapi(resumeRoute, async (c) => {
    const record = c.get('sandbox');
    if (record.state === 'running')
      return c.json({ success: true, sandbox_id: record.id, state: 'running' }, 200);
    const result = await d.sandboxes.resume(record.id);
    return c.json({ success: true, sandbox_id: record.id, state: stateOf(result, 'running') }, 200);
  });

  app.openapi(snapshotRoute, async (c) => {
    // A snapshot is the owner's (storage counted to them, forks made from it): members may not.
    assertOwner(c, 'take snapshots');
    const record = c.get('sandbox');
    const result = (await d.sandboxes.snapshot(record.id)) as Record<string, unknown> | undefined;
    const snapshot: Record<string, unknown> = {};
    for (const k of SNAPSHOT_FIELDS) if (result && result[k] !== undefined) snapshot[k] = result[k];
    return c.json({ success: true, sandbox_id: record.id, snapshot }, 200);
  });
}
