// What the sandbox route modules share: their dependencies, bundled once by the app.
import type { ApiConfig } from '../config.ts';
import type { ApiSandboxes, ApiSidecars, ApiTee } from '../deps.ts';
import type { LiveAccess } from '../live-access.ts';
import type { RunLog } from '../runs/run-log.ts';
import type { RunService } from '../runs/run-service.ts';

export interface SandboxRouteDeps {
  sandboxes: ApiSandboxes;
  sidecars: ApiSidecars;
  runs: RunService;
  runLog: RunLog;
  config: ApiConfig;
  tee: ApiTee | undefined;
  /** Open streams and proxied connections, ended when their grant is taken away. */
  live: LiveAccess;
}
