// SSH into the sandbox: one `sshd -i` (inetd mode) per tunnel, run as the agent user, its stdin and
// stdout the upgraded connection the operator opened (GET /ssh, `Upgrade: agent-sandbox-ssh`).
// - No sshd listens anywhere: there is no port in the container, on the host or on the sandbox
//   network for a neighbour to knock on; a tunnel exists only while the operator relays one.
// - The authorized keys come with each tunnel (the preamble: one JSON line), from the operator's
//   record, so a revoked key is refused from the next connection on, whatever the container holds;
//   PUT /ssh/keys (the keys left) ends the open sessions a revoked key let in (sshd's Accepted line).
//   They are written as `type base64` lines (no options, no comment: the operator rebuilt them
//   from the parsed blob) into a fresh root-owned directory the agent can read but not change.
// - Key-only: no password, no keyboard-interactive, no PAM, no root, no forwarding of any kind.
// - The host key is the sandbox's own (made by the agent user on first use in its home, so it
//   survives stop/resume and snapshots); sshd as a non-root user can only log that user in.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { terminateTree } from '../agents/process-tree.ts';
import type { SidecarConfig } from '../config.ts';
import { childEnv } from '../exec/child-env.ts';
import { identity, terminateGroup } from '../exec/run-process.ts';
import type { BearerAuth } from '../http/auth.ts';

export const SSH_UPGRADE = 'agent-sandbox-ssh';
export const SSHD = '/usr/sbin/sshd';
/** The host key, in the agent's home (the workspace volume): the sandbox keeps one identity. */
export const HOST_KEY_DIR = '.config/agent-sandbox/ssh';
const MAX_PREAMBLE = 64 * 1024;
const MAX_KEYS = 32;
/** What the operator sends: the key types it accepts, each line `type base64` and nothing else. */
const KEY_LINE =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]{16,16384}={0,2}$/;

export function sshdConfig(hostKey: string): string {
  return `${[
    `HostKey ${hostKey}`,
    'AllowUsers agent',
    'PermitRootLogin no',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'HostbasedAuthentication no',
    'PermitEmptyPasswords no',
    'UsePAM no',
    'AuthenticationMethods publickey',
    // The key file is the sidecar's (root, 0644, in a root-owned 0755 directory it just made);
    // StrictModes would refuse it only for living under /tmp (1777), the one writable root path.
    'StrictModes no',
    'MaxAuthTries 4',
    'LoginGraceTime 30',
    // No agent, X11, TCP or stream-local forwarding, no tun devices, no user environment files.
    'DisableForwarding yes',
    'PermitTunnel no',
    'PermitUserEnvironment no',
    'PrintMotd no',
    'PrintLastLog no',
    'PidFile none',
    'LogLevel INFO',
    'Subsystem sftp internal-sftp',
  ].join('\n')}\n`;
}

/** Parses the preamble: `{"authorized_keys": ["type base64", …]}`; throws on anything else. */
export function parsePreamble(line: string): string[] {
  const body = JSON.parse(line) as { authorized_keys?: unknown };
  const keys = body?.authorized_keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) {
    throw new Error(`authorized_keys must list 1 to ${MAX_KEYS} keys`);
  }
  for (const k of keys) {
    if (typeof k !== 'string' || !KEY_LINE.test(k)) throw new Error('an authorized key is not "type base64"');
  }
  return keys as string[];
}

/** A key line's fingerprint as sshd logs it: `SHA256:` + unpadded base64 of the blob's digest. */
export function fingerprintOf(keyLine: string): string {
  const blob = Buffer.from(keyLine.split(' ')[1] ?? '', 'base64');
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key sshd let in, from its log line (`Accepted publickey for agent … ED25519 SHA256:…`). */
export function acceptedFingerprint(logLine: string): string | undefined {
  return /^Accepted publickey for \S+ .* (SHA256:[A-Za-z0-9+/]+)$/.exec(logLine.trim())?.[1];
}

/** PUT /ssh/keys: the keys still let in (may be empty); parsed like the preamble's list. */
export function parseKeysBody(body: unknown): string[] {
  const keys = (body as { authorized_keys?: unknown } | null)?.authorized_keys;
  if (!Array.isArray(keys) || keys.length > MAX_KEYS)
    throw new Error(`authorized_keys must list 0 to ${MAX_KEYS} keys`);
  for (const k of keys) {
    if (typeof k !== 'string' || !KEY_LINE.test(k)) throw new Error('an authorized key is not "type base64"');
  }
  return keys as string[];
}

function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ success: false, error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${code}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Makes the host key (as the agent user) unless it is there; resolves with its path. */
function ensureHostKey(config: SidecarConfig): Promise<string> {
  const dir = join(config.agentHome, HOST_KEY_DIR);
  const key = join(dir, 'ssh_host_ed25519_key');
  return new Promise((resolve, reject) => {
    // As the agent, in its own home: root never follows a path the agent controls.
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        'umask 077 && mkdir -p "$1" && { [ -s "$2" ] || ssh-keygen -q -t ed25519 -N "" -C agent-sandbox-host -f "$2"; }',
        'sh',
        dir,
        key,
      ],
      { cwd: config.agentHome, env: childEnv(config), ...identity(config.uid, config.gid), stdio: 'ignore' },
    );
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(key) : reject(new Error(`ssh-keygen exited ${code}`))));
  });
}

/** Reads the preamble line off the socket; resolves with it and whatever came after it. */
function readPreamble(socket: Duplex, head: Buffer): Promise<{ line: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf = head;
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      check();
    };
    const done = (err?: Error, v?: { line: string; rest: Buffer }) => {
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause();
      if (err) reject(err);
      else resolve(v!);
    };
    const onClose = () => done(new Error('tunnel closed before its preamble'));
    const check = () => {
      const nl = buf.indexOf(10);
      if (nl >= 0)
        return done(undefined, { line: buf.subarray(0, nl).toString('utf8'), rest: buf.subarray(nl + 1) });
      if (buf.length > MAX_PREAMBLE) done(new Error('preamble too long'));
    };
    socket.on('data', onData);
    socket.on('close', onClose);
    check();
  });
}

export interface SshTunnels {
  /** The upgrade handler for GET /ssh; false when the request is not one (the caller answers). */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /**
   * The owner's keys changed (one was revoked): each open tunnel whose session a key no longer
   * listed let in ends; one not yet logged in gets the new list for its login. Returns how many ended.
   */
  setKeys(keys: string[]): number;
  closeAll(): void;
}

export function sshTunnels(config: SidecarConfig, auth: BearerAuth, log: Logger): SshTunnels {
  /** Open tunnels: the key sshd let in (once it has), what may still log in, and how to end it. */
  interface Tunnel {
    end: () => void;
    accepted?: string;
    allowed: Set<string>;
    dir: string;
  }
  const open = new Set<Tunnel>();
  const start = async (socket: Duplex, head: Buffer) => {
    const { line, rest } = await readPreamble(socket, head);
    const keys = parsePreamble(line);
    const hostKey = await ensureHostKey(config);
    // A fresh directory only root can change (mkdtemp: 0700, random name, in the tmpfs), opened
    // to reading so the agent's sshd can read its files; the agent cannot swap them.
    const dir = mkdtempSync('/tmp/agent-sandbox-ssh-');
    chmodSync(dir, 0o755);
    const cleanup = () => rmSync(dir, { recursive: true, force: true });
    try {
      writeFileSync(join(dir, 'sshd_config'), sshdConfig(hostKey), { mode: 0o644, flag: 'wx' });
      writeFileSync(join(dir, 'authorized_keys'), `${keys.join('\n')}\n`, { mode: 0o644, flag: 'wx' });
    } catch (e) {
      cleanup();
      throw e;
    }
    const child = spawn(
      SSHD,
      [
        '-i',
        '-e',
        '-f',
        join(dir, 'sshd_config'),
        '-o',
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      ],
      {
        cwd: config.agentHome,
        env: childEnv(config),
        ...identity(config.uid, config.gid),
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let ended = false;
    const tunnel: Tunnel = { end: () => end(), allowed: new Set(keys.map(fingerprintOf)), dir };
    const end = () => {
      if (ended) return;
      ended = true;
      open.delete(tunnel);
      socket.destroy();
      child.stdin.destroy();
      child.stdout.destroy();
      // The session's shell runs in a session of its own (sshd's setsid): the whole tree goes,
      // read while it still hangs under sshd, so nothing of a revoked session keeps running.
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        terminateTree(child.pid);
        terminateGroup(child.pid);
      }
      cleanup();
    };
    open.add(tunnel);
    child.on('error', (err) => {
      log.warn({ err }, 'sshd did not start');
      end();
    });
    child.on('close', end);
    socket.on('close', end);
    socket.on('error', end);
    child.stdin.on('error', () => {});
    let partial = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      const lines = (partial + s).split('\n');
      partial = (lines.pop() ?? '').slice(-4096);
      for (const l of lines) {
        if (!l.trim()) continue;
        log.info({ sshd: l.trim().slice(0, 300) }, 'ssh');
        const fp = acceptedFingerprint(l);
        if (fp && tunnel.accepted === undefined) {
          tunnel.accepted = fp;
          // Revoked between sshd's check and this line: the session ends now.
          if (!tunnel.allowed.has(fp)) end();
        }
      }
    });
    if (rest.length > 0) child.stdin.write(rest);
    socket.pipe(child.stdin);
    child.stdout.pipe(socket);
    socket.resume();
  };

  return {
    handle(req, socket, head) {
      const path = (req.url ?? '/').split('?', 1)[0];
      if (path !== '/ssh') return false;
      socket.on('error', () => socket.destroy());
      if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== SSH_UPGRADE) {
        refuse(socket, 400, 'INVALID_REQUEST', `GET /ssh takes Upgrade: ${SSH_UPGRADE}`);
        return true;
      }
      // In a CVM the operator's token must not decide who logs in (it could add its own key).
      if (config.tee) {
        refuse(
          socket,
          403,
          'FORBIDDEN',
          'SSH is not offered in a TEE sandbox: the operator would choose its keys',
        );
        return true;
      }
      try {
        auth.check(req, new URLSearchParams(), false);
      } catch (e) {
        const err = e as { status?: number; code?: string; message: string };
        refuse(socket, err.status ?? 401, err.code ?? 'UNAUTHORIZED', err.message);
        return true;
      }
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${SSH_UPGRADE}\r\nconnection: Upgrade\r\n\r\n`,
      );
      start(socket, head).catch((err: unknown) => {
        log.warn({ err: (err as Error).message }, 'ssh tunnel refused');
        socket.destroy();
      });
      return true;
    },
    setKeys(keys) {
      const allowed = new Set(keys.map(fingerprintOf));
      let n = 0;
      for (const t of [...open]) {
        t.allowed = allowed;
        if (keys.length === 0 || (t.accepted !== undefined && !allowed.has(t.accepted))) {
          t.end();
          n++;
        } else if (t.accepted === undefined) {
          // Not logged in yet: its sshd reads this file at the login, so it gets the new list.
          const file = join(t.dir, 'authorized_keys');
          writeFileSync(`${file}.new`, `${keys.join('\n')}\n`, { mode: 0o644 });
          renameSync(`${file}.new`, file);
        }
      }
      return n;
    },
    closeAll() {
      for (const t of [...open]) t.end();
    },
  };
}
