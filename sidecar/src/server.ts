// Starts the sidecar HTTP server. From its first listen it answers the two routes a create needs,
// GET /health and PUT /env (the operator's env delivery, with its token rotation), on a router of
// their own; so a sandbox is ready as soon as its sidecar answers. The rest of the app (routes,
// terminals, agents) loads after the env is delivered, or at the first request for it: Debian's
// Node 18 compiles every builtin (crypto, child_process, ...) at load time with no code cache, and
// that load blocks the event loop, so loading it at listen held the health check and the delivery
// behind it. In a CVM (SIDECAR_TEE) PUT /env is the owner's and stays in the app (see isBootRoute).
import { chmodSync, chownSync, lstatSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { SidecarApp } from './app.ts';
import { importApp } from './app-module.ts';
import type { SidecarConfig } from './config.ts';
import { BearerAuth } from './http/auth.ts';
import { ok, Router } from './http/http-router.ts';
import { putUserEnvHandler } from './routes/user-env.ts';

export interface RunningSidecar {
  server: Server;
  port: number;
  url: string;
  /** The full app (routes, terminals, agents); loads it if it has not been yet. */
  app(): Promise<SidecarApp>;
  /** Whether the full app has been asked to load (by a delivery or a request for it). */
  readonly appRequested: boolean;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Test hook: how the full app is made (default: import app.ts, createApp with the shared auth). */
  loadApp?: (auth: BearerAuth) => Promise<SidecarApp>;
}

/**
 * The routes the boot router answers itself; everything else is the app's. In a CVM (config.tee)
 * PUT /env is the owner's, through the owner channel the app holds, never the operator token's:
 * the boot answers /health alone there.
 */
function isBootRoute(req: IncomingMessage, tee: boolean): boolean {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (req.method === 'GET' && path === '/health') return true;
  return !tee && req.method === 'PUT' && path === '/env';
}

export async function startSidecar(
  config: SidecarConfig,
  log: Logger,
  opts: StartOptions = {},
): Promise<RunningSidecar> {
  // The workspace must exist and belong to the agent user before anything runs in it.
  mkdirSync(config.workspaceRoot, { recursive: true });
  if (process.getuid?.() === 0) {
    try {
      chownSync(config.workspaceRoot, config.uid, config.gid);
    } catch {}
  }

  // One credential for both routers: a rotation by PUT /env holds for every route at once.
  const auth = new BearerAuth(config.authToken);
  const makeApp =
    opts.loadApp ?? ((a: BearerAuth) => importApp().then((m) => m.createApp(config, log, a.cell)));
  let appPromise: Promise<SidecarApp> | undefined;
  const loadApp = () => {
    appPromise ??= makeApp(auth);
    return appPromise;
  };
  const tee = config.tee !== undefined;
  const boot = new Router(auth, log, config.maxBodyBytes).add(
    'GET',
    '/health',
    () => ok({ status: 'ok', timestamp: new Date().toISOString() }),
    { auth: false },
  );
  if (!tee) boot.add('PUT', '/env', putUserEnvHandler(config, auth));
  const server = createServer((req, res) => {
    if (isBootRoute(req, tee)) {
      // Delivered: the sandbox is ready; load the rest now, after the answer has gone out.
      if (req.method === 'PUT' && !appPromise) {
        res.once('finish', () => {
          if (res.statusCode === 200) setImmediate(() => void loadApp().catch(() => {}));
        });
      }
      boot.handle(req, res);
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
  // The one upgrade the sidecar takes: GET /ssh (app.ssh); anything else is refused and closed.
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    loadApp().then(
      (app) => {
        if (!app.ssh.handle(req, socket, head))
          socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      },
      () => socket.destroy(),
    );
  });
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
  // In a CVM the app makes the sealing key: at boot, as before, since no delivery will come.
  if (tee) setImmediate(() => void loadApp().catch(() => {}));
  return {
    server,
    port,
    url: socketPath ? 'http://localhost' : `http://127.0.0.1:${port}`,
    app: loadApp,
    get appRequested() {
      return appPromise !== undefined;
    },
    async close() {
      if (appPromise) (await appPromise.catch(() => undefined))?.close();
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
