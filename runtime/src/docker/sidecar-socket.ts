// The Unix socket a sandbox without a network (SANDBOX_EGRESS=none) serves its sidecar on: a
// per-sandbox host directory (root-only, 0700) bind-mounted into the container, where the root
// sidecar creates the socket. The agent user (uid 1000) cannot enter the directory, so it can
// neither connect to the socket nor replace it; the operator reaches it by path.
import { lstat, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RuntimeError } from '../errors.ts';

/** Where the directory is mounted inside the container. */
export const SOCKET_MOUNT = '/run/sidecar';
export const SOCKET_NAME = 'sidecar.sock';
/** The socket's path inside the container (the sidecar's SIDECAR_SOCKET). */
export const SOCKET_IN_CONTAINER = `${SOCKET_MOUNT}/${SOCKET_NAME}`;
/** sun_path holds 108 bytes with its NUL; a longer path cannot be bound or connected to. */
export const MAX_SOCKET_PATH = 107;

export function socketDir(root: string, sandboxId: string): string {
  return join(root, sandboxId);
}

export function socketPath(root: string, sandboxId: string): string {
  return join(socketDir(root, sandboxId), SOCKET_NAME);
}

/**
 * Creates (or re-checks) the sandbox's socket directory: a real directory, owned by the
 * operator, mode 0700. A symlink or a directory someone else owns is refused.
 */
export async function prepareSocketDir(root: string, sandboxId: string, agentUid: number): Promise<string> {
  if (process.getuid?.() === agentUid) {
    // The directory would belong to the very uid the sandbox's code runs as: it could replace the socket.
    throw new RuntimeError(
      'PROVISION_FAILED',
      `the operator runs as uid ${agentUid}, the sandbox agent's uid, so it cannot keep the sidecar socket from the agent; run it as root or another user`,
    );
  }
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = socketDir(root, sandboxId);
  await mkdir(dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') throw e;
  });
  const st = await lstat(dir);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) {
    throw new RuntimeError(
      'PROVISION_FAILED',
      `the sidecar socket directory ${dir} is not a 0700 directory of the operator's user; remove it and retry`,
    );
  }
  return dir;
}

/** Removes the sandbox's socket directory (missing is fine). */
export async function removeSocketDir(root: string, sandboxId: string): Promise<void> {
  await rm(socketDir(root, sandboxId), { recursive: true, force: true });
}
