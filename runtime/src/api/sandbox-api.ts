// The routes of one sandbox, built once and mounted twice: `/api/sandboxes/:id/…` (cloud) and
// `/api/sandbox/…` (instance modes). The mount decides which sandbox; everything else is shared.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { ApiEnv } from './context.ts';
import type { ApiSessions } from './deps.ts';
import { requireSandboxAccess, requireSession } from './middleware/session.ts';
import type { PreviewCredentials } from './previews/preview-credentials.ts';
import type { PreviewLinks } from './previews/preview-links.ts';
import type { PreviewOrigin } from './previews/preview-origin.ts';
import { registerCapabilities } from './routes/capabilities.ts';
import { registerExec } from './routes/exec.ts';
import { registerFiles } from './routes/files.ts';
import { registerLifecycle } from './routes/lifecycle.ts';
import { registerMembers } from './routes/members.ts';
import { registerPortProxy } from './routes/port-proxy.ts';
import { registerPreviewLinks } from './routes/preview-links.ts';
import { registerPreviews } from './routes/previews.ts';
import { registerRuns } from './routes/runs.ts';
import { registerGet } from './routes/sandboxes.ts';
import { registerSecrets } from './routes/secrets.ts';
import { registerSsh } from './routes/ssh.ts';
import { registerTee } from './routes/tee.ts';
import { registerTerminals } from './routes/terminals.ts';
import type { SandboxRouteDeps } from './routes/types.ts';
import { validationHook } from './routes/validation.ts';

export function sandboxApi(
  d: SandboxRouteDeps,
  sessions: Pick<ApiSessions, 'verify'>,
  previews: { credentials: PreviewCredentials; origin: PreviewOrigin | undefined; links: PreviewLinks },
): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });
  // Order matters: who is calling (a Bearer session: on this origin no cookie opens anything, the
  // port proxy included), then may they use this sandbox (sandboxId was set by the mount).
  app.use('*', requireSession(sessions));
  app.use('*', requireSandboxAccess(d.sandboxes));
  registerGet(app, d.config.ssh && !d.tee);
  registerExec(app, d);
  registerRuns(app, d);
  registerCapabilities(app, d);
  registerLifecycle(app, d);
  registerSecrets(app, d);
  registerMembers(app, d, d.live);
  registerTerminals(app, d);
  registerFiles(app, d);
  registerPreviews(app, d, previews.credentials, previews.origin);
  registerPreviewLinks(app, d, previews.links, previews.origin);
  registerPortProxy(app, d);
  registerSsh(app, d);
  if (d.tee) registerTee(app, d.tee);
  return app;
}
