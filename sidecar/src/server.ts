// Starts the sidecar HTTP server. /health is answered here; the rest of the app loads right after the
// server listens (not before, so /health answers as early as the process can), because Debian's
// Node 18 compiles every builtin (crypto, child_process, ...) at load time, with no code cache.
import { chmodSync, chownSync, lstatSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { SidecarApp } from './app.ts';
import type { SidecarConfig } from './config.ts';

export interface RunningSidecar {
  server: Server;
  port: number;
  url: string;
  /** The full app (routes, terminals, agents); loads it if it has not been yet. */
  app(): Promise<SidecarApp>;
  close(): Promise<void>;
}

export async function startSidecar(config: SidecarConfig, log: Logger): Promise<RunningSidecar> {
  // The workspace must exist and belong to the agent user before anything runs in it.
  mkdirSync(config.workspaceRoot, { recursive: true });
  if (process.getuid?.() === 0) {
    try {
      chownSync(config.workspaceRoot, config.uid, config.gid);
    } catch {}
  }

  let appPromise: Promise<SidecarApp> | undefined;
  const loadApp = () => {
    appPromise ??= import('./app.ts').then((m) => m.createApp(config, log));
    return appPromise;
  };
  let seq = 0;
  const health = (req: IncomingMessage, res: ServerResponse) => {
    const incoming = req.headers['x-request-id'];
    const id =
      typeof incoming === 'string' && /^[\w.:-]{1,128}$/.test(incoming)
        ? incoming
        : `h-${process.pid}-${++seq}`;
    const body = JSON.stringify({ status: 'ok', timestamp: new Date().toISOString() });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': id });
    res.end(body);
    // The operator's next call follows its health check: have the app ready by then.
    if (!appPromise) setImmediate(() => void loadApp().catch(() => {}));
  };
  const server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/health' || req.url?.startsWith('/health?'))) {
      health(req, res);
      return;
    }
    loadApp().then(
      (app) => app.router.handle(req, res),
      (err: unknown) => {
        log.error({ err }, 'sidecar app failed to load');
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(
          JSON.stringify({ success: false, error: { code: 'INTERNAL', message: 'sidecar failed to load' } }),
        );
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  const socketPath = config.socketPath;
  if (socketPath) removeStaleSocket(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (socketPath) server.listen(socketPath, () => resolve());
    else server.listen(config.port, config.host, () => resolve());
  });
  // Its directory (the operator's, 0700) already keeps the agent user out; the socket is 0600 and
  // belongs to the directory's owner, so an operator that is not root can connect too.
  if (socketPath) {
    chmodSync(socketPath, 0o600);
    const owner = statSync(dirname(socketPath));
    if (process.getuid?.() === 0 && owner.uid !== 0) chownSync(socketPath, owner.uid, owner.gid);
  }
  const port = socketPath ? 0 : (server.address() as AddressInfo).port;
  log.info({ port, socket: socketPath, workspace: config.workspaceRoot }, 'sidecar listening');
  // The operator's first calls (health, then PUT /env) follow at once: load the app now rather
  // than after the first /health, so its ~100 ms load overlaps the operator's health poll.
  setImmediate(() => void loadApp().catch(() => {}));
  return {
    server,
    port,
    url: socketPath ? 'http://localhost' : `http://127.0.0.1:${port}`,
    app: loadApp,
    async close() {
      if (appPromise) (await appPromise).close();
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A socket left by this sandbox's previous start (stop/resume) is replaced; anything else is refused. */
function removeStaleSocket(path: string): void {
  let st: ReturnType<typeof lstatSync> | undefined;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  unlinkSync(path);
}
