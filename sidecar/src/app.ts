// Everything behind /health and PUT /env: routes, terminal sessions and agent runs. Loaded after the
// env delivery or on first use (see server.ts); /health and PUT /env are here too for direct callers.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { AgentRunner } from './agents/agent-runner.ts';
import type { SidecarConfig } from './config.ts';
import { SidecarError } from './errors.ts';
import { WorkspaceFiles } from './files/workspace-files.ts';
import { BearerAuth, type TokenCell } from './http/auth.ts';
import { ok, Router } from './http/http-router.ts';
import { addAgentRoutes } from './routes/agents.ts';
import { execHandler } from './routes/exec.ts';
import { listFilesHandler, readFileHandler, writeFileHandler } from './routes/files.ts';
import { teeAttestationHandler, teePublicKeyHandler, teeSealedSecretsHandler } from './routes/tee.ts';
import { teeChannelHandler } from './routes/tee-channel.ts';
import { addTerminalRoutes } from './routes/terminals.ts';
import { putUserEnvHandler } from './routes/user-env.ts';
import { parseKeysBody, type SshTunnels, sshTunnels } from './ssh/ssh-tunnel.ts';
import { DstackClient } from './tee/dstack-client.ts';
import { DstackEnclave } from './tee/enclave.ts';
import { TerminalRegistry } from './terminals/terminal-registry.ts';

export interface SidecarApp {
  router: Router;
  terminals: TerminalRegistry;
  agents: AgentRunner;
  /** GET /ssh upgrades (ssh/ssh-tunnel.ts): one `sshd -i` per tunnel the operator relays. */
  ssh: SshTunnels;
  close(): void;
}

function refuseReachableSocket(socket: string): void {
  const dir = statSync(dirname(socket), { throwIfNoEntry: false });
  if (dir && (dir.mode & 0o077) !== 0) {
    throw new Error(
      `the dstack socket's directory ${dirname(socket)} is open to other users (mode ${(dir.mode & 0o777).toString(8)}): the agent could get quotes over its own report_data; mount the socket into a 0700 directory such as /run/tee`,
    );
  }
}

/** `token`: the operator's token cell, shared with the boot router (server.ts) so a rotation holds for both. */
export function createApp(config: SidecarConfig, log: Logger, token?: TokenCell): SidecarApp {
  const auth = new BearerAuth(token ?? config.authToken);
  const asRoot = process.getuid?.() === 0;
  const files = new WorkspaceFiles({
    root: config.workspaceRoot,
    maxFileBytes: config.maxFileBytes,
    owner: asRoot ? { uid: config.uid, gid: config.gid } : undefined,
  });
  const terminals = new TerminalRegistry(config);
  const agents = new AgentRunner(config, log);
  // In a CVM the token above is the operator's: it reaches only health and the /tee routes below.
  // Every other route takes the owner credential, made here and never leaving this process; only
  // the owner channel (an owner-signed request, encrypted to the attested key) uses it.
  const ownerToken = config.tee ? randomBytes(32).toString('hex') : undefined;
  const router = new Router(ownerToken ? new BearerAuth(ownerToken) : auth, log, config.maxBodyBytes);
  router
    .add('GET', '/health', () => ok({ status: 'ok', timestamp: new Date().toISOString() }), { auth: false })
    .add('POST', '/terminals/commands', execHandler(config))
    .add('POST', '/files/read', readFileHandler(files))
    .add('POST', '/files/write', writeFileHandler(files))
    .add('POST', '/files/list', listFilesHandler(files))
    .add('PUT', '/env', putUserEnvHandler(config, auth));
  if (config.tee) {
    // No quote oracle: the agent user must not reach the dstack socket (its directory is root's).
    refuseReachableSocket(config.tee.dstackSocket);
    // The sealing key is made now, in memory, and dies with this process.
    const enclave = new DstackEnclave(config.tee.context, new DstackClient(config.tee.dstackSocket));
    router
      .add('GET', '/tee/attestation', teeAttestationHandler(enclave), { auth })
      .add('GET', '/tee/public-key', teePublicKeyHandler(enclave), { auth })
      .add('POST', '/tee/channel', teeChannelHandler(enclave.channel, ownerToken!, config), { auth })
      // Owner only (through the channel): an operator could otherwise seal its own env to the key.
      .add('POST', '/tee/sealed-secrets', teeSealedSecretsHandler(enclave, config));
    log.info({ keyId: enclave.keyId }, 'TEE sealing key made (dstack)');
  }
  addAgentRoutes(router, config, agents);
  addTerminalRoutes(router, config, terminals);
  const ssh = sshTunnels(config, auth, log);
  router.add('PUT', '/ssh/keys', async (ctx) => {
    let keys: string[];
    try {
      keys = parseKeysBody(await ctx.body());
    } catch (e) {
      throw new SidecarError('INVALID_REQUEST', (e as Error).message, 400);
    }
    return ok({ success: true, ended: ssh.setKeys(keys) });
  });
  return {
    router,
    terminals,
    agents,
    ssh,
    close() {
      agents.cancel();
      terminals.closeAll();
      ssh.closeAll();
    },
  };
}
