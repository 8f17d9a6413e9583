// SSH into a sandbox: the owner's keys (GET/POST/DELETE …/ssh) and the tunnel (GET …/ssh/tunnel, a
// WebSocket that `agent-sandbox ssh connect` opens as ssh's ProxyCommand). The tunnel is relayed to
// the sidecar's GET /ssh upgrade, which runs one `sshd -i` for it as the agent user; no port is
// published anywhere. Two locks, both the owner's: this API's wallet session (plus the sandbox
// access check every route has) and an SSH key the owner added. Revoking a key ends the sessions
// it let in (the sidecar knows which key each used); removing a member ends theirs (live-access.ts).

import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { RuntimeError } from '../../errors.ts';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import { assertOwner } from '../middleware/session.ts';
import {
  errors,
  json,
  jsonBody,
  SANDBOX_ERRORS,
  SshKeyAddedSchema,
  SshKeyRequestSchema,
  SshSchema,
} from '../schemas.ts';
import { sshView } from '../views.ts';
import type { UpgradeEnv } from './port-proxy.ts';
import type { SandboxRouteDeps } from './types.ts';

/** The sidecar's upgrade token (sidecar/src/ssh/ssh-tunnel.ts). */
const SIDECAR_UPGRADE = 'agent-sandbox-ssh';
/** A tunnel counts as activity (the idle timer) at most this often. */
const TOUCH_EVERY_MS = 30_000;

const sshWithId = SshSchema.extend({ sandbox_id: z.string() });

const getRoute = createRoute({
  method: 'get',
  path: '/ssh',
  tags: ['ssh'],
  summary: 'SSH: on or off, the keys let in (fingerprints), and the tunnel path',
  security: [{ bearer: [] }],
  responses: { 200: json(sshWithId, 'SSH'), ...errors(...SANDBOX_ERRORS) },
});

const addRoute = createRoute({
  method: 'post',
  path: '/ssh',
  tags: ['ssh'],
  summary:
    'Owner: let an SSH public key in (turns SSH on; the same key twice is one; at most 16); kept across stop/resume',
  security: [{ bearer: [] }],
  request: { body: jsonBody(SshKeyRequestSchema) },
  responses: {
    200: json(SshKeyAddedSchema, 'Added'),
    ...errors(400, ...SANDBOX_ERRORS, 409, 422),
  },
});

const removeRoute = createRoute({
  method: 'delete',
  path: '/ssh',
  tags: ['ssh'],
  summary:
    "Owner: revoke a key (by fingerprint); ends the open SSH sessions it let in (the other keys' go on); the last key gone, SSH is off",
  security: [{ bearer: [] }],
  request: {
    query: z.object({
      fingerprint: z.string().max(64).openapi({ description: 'SHA256:… (`ssh-keygen -lf key.pub`)' }),
    }),
  },
  responses: { 200: json(sshWithId, 'Revoked'), ...errors(400, ...SANDBOX_ERRORS) },
});

/** Whether this operator offers SSH at all (the views say `enabled: false` where it does not). */
const offered = (d: SandboxRouteDeps) => d.config.ssh && !d.tee;

function assertOffered(d: SandboxRouteDeps): void {
  if (d.tee) {
    throw new RuntimeError(
      'SSH_UNAVAILABLE',
      'SSH is not offered on a TEE sandbox: its keys would be the operator’s to choose; use the owner channel (--tee)',
    );
  }
  if (!d.config.ssh) {
    throw new RuntimeError('SSH_UNAVAILABLE', 'this operator does not offer SSH (SANDBOX_SSH=false)');
  }
}

export function registerSsh(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(getRoute, (c) =>
    c.json({ sandbox_id: c.get('sandbox').id, ...sshView(c.get('sandbox'), offered(d)) }, 200),
  );

  app.openapi(addRoute, async (c) => {
    assertOwner(c, 'add SSH keys');
    assertOffered(d);
    const id = c.get('sandbox').id;
    const { key, record } = await d.sandboxes.addSshKey(id, c.req.valid('json').public_key);
    const ssh = sshView(record, offered(d));
    return c.json(
      { sandbox_id: id, key: ssh.keys.find((k) => k.fingerprint === key.fingerprint)!, ssh },
      200,
    );
  });

  app.openapi(removeRoute, async (c) => {
    assertOwner(c, 'revoke SSH keys');
    const id = c.get('sandbox').id;
    const record = await d.sandboxes.removeSshKey(id, c.req.valid('query').fingerprint);
    await endRevokedSessions(d, record);
    return c.json({ sandbox_id: id, ...sshView(record, offered(d)) }, 200);
  });

  app.openAPIRegistry.registerPath({
    method: 'get',
    path: '/ssh/tunnel',
    tags: ['ssh'],
    summary:
      'WebSocket tunnel to the sandbox’s sshd (binary frames carry the SSH stream): `ssh -o ProxyCommand="agent-sandbox ssh connect <id>" agent@<id>`',
    security: [{ bearer: [] }],
    responses: {
      101: { description: 'Switching Protocols: the SSH stream follows' },
      ...errors(400, ...SANDBOX_ERRORS, 409, 422, 502),
    },
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  app.get('/ssh/tunnel', async (c) => {
    assertOffered(d);
    const record = c.get('sandbox');
    const up = (c.env as { upgrade?: UpgradeEnv; incoming?: IncomingMessage } | undefined) ?? {};
    if (!up.upgrade || !up.incoming || c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      throw new RuntimeError(
        'VALIDATION',
        'the SSH tunnel is a WebSocket: use `ssh -o ProxyCommand="agent-sandbox ssh connect <id>" agent@<id>`',
      );
    }
    if ((record.sshKeys ?? []).length === 0) {
      throw new RuntimeError(
        'SSH_DISABLED',
        `SSH is off for ${record.id}: add a key first (agent-sandbox ssh add ${record.id} ~/.ssh/id_ed25519.pub)`,
      );
    }
    const upstream = await openSidecarTunnel(d, record);
    const { socket, head } = up.upgrade;
    up.upgrade.taken = true;
    wss.handleUpgrade(up.incoming, socket, head, (ws) => {
      const stream = createWebSocketStream(ws);
      let lastTouch = 0;
      let release = () => {};
      const close = () => {
        release();
        upstream.destroy();
        stream.destroy();
        ws.terminate();
      };
      release = d.live.hold({ sandboxId: record.id, address: c.get('session').address, ssh: true }, close);
      stream.on('data', () => {
        const now = Date.now();
        if (now - lastTouch < TOUCH_EVERY_MS) return;
        lastTouch = now;
        void Promise.resolve(d.sandboxes.touch(record.id)).catch(() => {});
      });
      stream.pipe(upstream);
      upstream.pipe(stream);
      for (const s of [stream, upstream]) {
        s.on('error', close);
        s.on('close', close);
      }
    });
    return new Response(null, { status: 204 });
  });
}

/**
 * Ends the open sessions a revoked key let in. Which tunnel used which key is sshd's to know, so
 * the sidecar is told the keys left (PUT /ssh/keys) and ends the others; the other keys' sessions
 * go on. Where the sidecar cannot be told (stopped, an older image, no answer) or no key is left,
 * every SSH tunnel of the sandbox ends here: a revoked key's session never outlives the DELETE.
 */
async function endRevokedSessions(d: SandboxRouteDeps, record: SandboxRecord): Promise<void> {
  const keys = (record.sshKeys ?? []).map((k) => k.key);
  if (keys.length > 0 && record.state === 'running') {
    try {
      await putSidecarKeys(d, record, keys);
      return;
    } catch {
      // falls through: end them all
    }
  }
  d.live.endSsh(record.id);
}

function putSidecarKeys(d: SandboxRouteDeps, record: SandboxRecord, keys: string[]): Promise<void> {
  return Promise.resolve(d.sandboxes.sidecarEndpoint(record.id)).then(
    (ep) =>
      new Promise<void>((resolve, reject) => {
        const url = new URL(ep.url);
        const body = JSON.stringify({ authorized_keys: keys });
        const req = httpRequest({
          ...(ep.socketPath
            ? { socketPath: ep.socketPath }
            : { host: url.hostname, port: Number(url.port) || 80 }),
          method: 'PUT',
          path: '/ssh/keys',
          headers: {
            authorization: `Bearer ${ep.token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
          timeout: d.config.timeouts.default,
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', reject);
        req.on('response', (res) => {
          res.resume();
          if (res.statusCode === 200) resolve();
          else reject(new Error(`PUT /ssh/keys: ${res.statusCode}`));
        });
        req.end(body);
      }),
  );
}

/** Opens the sidecar's GET /ssh upgrade and sends the preamble: the keys, as `type base64`. */
async function openSidecarTunnel(d: SandboxRouteDeps, record: SandboxRecord): Promise<Duplex> {
  const ep = await d.sandboxes.sidecarEndpoint(record.id);
  const url = new URL(ep.url);
  const target = ep.socketPath
    ? { socketPath: ep.socketPath }
    : { host: url.hostname, port: Number(url.port) || 80 };
  const keys = (record.sshKeys ?? []).map((k) => k.key);
  return new Promise<Duplex>((resolve, reject) => {
    const req = httpRequest({
      ...target,
      method: 'GET',
      path: '/ssh',
      headers: { authorization: `Bearer ${ep.token}`, connection: 'Upgrade', upgrade: SIDECAR_UPGRADE },
      timeout: d.config.timeouts.default,
    });
    req.on('timeout', () =>
      req.destroy(new RuntimeError('SIDECAR_TIMEOUT', 'the sandbox did not answer in time')),
    );
    req.on('error', (e) =>
      reject(
        e instanceof RuntimeError
          ? e
          : new RuntimeError('SIDECAR_ERROR', 'the sandbox is not answering', { cause: e }),
      ),
    );
    req.on('response', (res) => {
      res.resume();
      reject(
        new RuntimeError(
          'SIDECAR_ERROR',
          `the sandbox refused the SSH tunnel (${res.statusCode}); an image without sshd cannot take SSH`,
        ),
      );
    });
    req.on('upgrade', (_res, socket, head) => {
      req.setTimeout(0);
      socket.write(`${JSON.stringify({ authorized_keys: keys })}\n`);
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.end();
  });
}
