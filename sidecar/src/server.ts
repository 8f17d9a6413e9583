// Assembles the sidecar HTTP server: auth, routes, terminal sessions and agent runs; start and stop.
import { chown, mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { AgentRunner } from './agents/agent-runner.ts';
import type { SidecarConfig } from './config.ts';
import { WorkspaceFiles } from './files/workspace-files.ts';
import { BearerAuth } from './http/auth.ts';
import { ok, Router } from './http/router.ts';
import { addAgentRoutes } from './routes/agents.ts';
import { execHandler } from './routes/exec.ts';
import { readFileHandler, writeFileHandler } from './routes/files.ts';
import { addTerminalRoutes } from './routes/terminals.ts';
import { TerminalRegistry } from './terminals/terminal-registry.ts';

export interface RunningSidecar {
  server: Server;
  port: number;
  url: string;
  terminals: TerminalRegistry;
  agents: AgentRunner;
  close(): Promise<void>;
}

export async function startSidecar(config: SidecarConfig, log: Logger): Promise<RunningSidecar> {
  const asRoot = process.getuid?.() === 0;
  // The workspace must exist and belong to the agent user before anything runs in it.
  await mkdir(config.workspaceRoot, { recursive: true });
  if (asRoot) await chown(config.workspaceRoot, config.uid, config.gid).catch(() => {});

  const files = new WorkspaceFiles({
    root: config.workspaceRoot,
    maxFileBytes: config.maxFileBytes,
    owner: asRoot ? { uid: config.uid, gid: config.gid } : undefined,
  });
  const terminals = new TerminalRegistry(config);
  const agents = new AgentRunner(config, log);
  const router = new Router(new BearerAuth(config.authToken), log, config.maxBodyBytes);
  router
    .add('GET', '/health', () => ok({ status: 'ok', timestamp: new Date().toISOString() }), { auth: false })
    .add('POST', '/terminals/commands', execHandler(config))
    .add('POST', '/files/read', readFileHandler(files))
    .add('POST', '/files/write', writeFileHandler(files));
  addAgentRoutes(router, config, agents);
  addTerminalRoutes(router, config, terminals);

  const server = createServer(router.handle);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  log.info({ port, workspace: config.workspaceRoot }, 'sidecar listening');
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    terminals,
    agents,
    async close() {
      agents.cancel();
      terminals.closeAll();
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
