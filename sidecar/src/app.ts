// Everything behind /health: auth, routes, terminal sessions and agent runs. Loaded on first use (see server.ts).
import type { Logger } from 'pino';
import { AgentRunner } from './agents/agent-runner.ts';
import type { SidecarConfig } from './config.ts';
import { WorkspaceFiles } from './files/workspace-files.ts';
import { BearerAuth } from './http/auth.ts';
import { ok, Router } from './http/http-router.ts';
import { addAgentRoutes } from './routes/agents.ts';
import { execHandler } from './routes/exec.ts';
import { readFileHandler, writeFileHandler } from './routes/files.ts';
import { addTerminalRoutes } from './routes/terminals.ts';
import { putUserEnvHandler } from './routes/user-env.ts';
import { TerminalRegistry } from './terminals/terminal-registry.ts';

export interface SidecarApp {
  router: Router;
  terminals: TerminalRegistry;
  agents: AgentRunner;
  close(): void;
}

export function createApp(config: SidecarConfig, log: Logger): SidecarApp {
  const asRoot = process.getuid?.() === 0;
  const files = new WorkspaceFiles({
    root: config.workspaceRoot,
    maxFileBytes: config.maxFileBytes,
    owner: asRoot ? { uid: config.uid, gid: config.gid } : undefined,
  });
  const terminals = new TerminalRegistry(config);
  const agents = new AgentRunner(config, log);
  const auth = new BearerAuth(config.authToken);
  const router = new Router(auth, log, config.maxBodyBytes);
  router
    .add('GET', '/health', () => ok({ status: 'ok', timestamp: new Date().toISOString() }), { auth: false })
    .add('POST', '/terminals/commands', execHandler(config))
    .add('POST', '/files/read', readFileHandler(files))
    .add('POST', '/files/write', writeFileHandler(files))
    .add('PUT', '/env', putUserEnvHandler(config, auth));
  addAgentRoutes(router, config, agents);
  addTerminalRoutes(router, config, terminals);
  return {
    router,
    terminals,
    agents,
    close() {
      agents.cancel();
      terminals.closeAll();
    },
  };
}
