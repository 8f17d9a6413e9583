// The sidecar on a Unix socket (SIDECAR_SOCKET, sandboxes without a network): it answers there and
// not on TCP, its socket is 0600, a socket left by the previous start is replaced, anything else
// at that path is refused rather than removed.
import { execFileSync } from 'node:child_process';
import { chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from './testing/sidecar-fixture.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sidecar-sock-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function get(socketPath: string, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('sidecar on a Unix socket', () => {
  it('answers health and authenticated routes on the socket, which is 0600, and replaces a stale one', async () => {
    const path = join(dir, 'a.sock');
    // A socket file nobody listens on: what a stopped container leaves behind.
    execFileSync('python3', [
      '-c',
      `import socket;socket.socket(socket.AF_UNIX).bind(${JSON.stringify(path)})`,
    ]);
    expect((await stat(path)).isSocket()).toBe(true);
    let fx: SidecarFixture | undefined;
    try {
      fx = await startSidecarFixture({ SIDECAR_SOCKET: path });
      expect(fx.sidecar.port).toBe(0);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect((await get(path, '/health')).status).toBe(200);
      expect((await get(path, '/agents')).status).toBe(401);
      expect((await get(path, '/agents', fx.token)).status).toBe(200);
    } finally {
      await fx?.close();
    }
  });

  it("hands the socket to its directory's owner (an operator that is not root)", async () => {
    const sub = join(dir, 'op');
    await mkdir(sub, { mode: 0o700 });
    await chown(sub, 4242, 4242);
    const fx = await startSidecarFixture({ SIDECAR_SOCKET: join(sub, 's.sock') });
    try {
      const st = await stat(join(sub, 's.sock'));
      expect([st.uid, st.gid, st.mode & 0o777]).toEqual([4242, 4242, 0o600]);
    } finally {
      await fx.close();
    }
  });

  it('refuses to start when something other than a socket is at the path, and leaves it alone', async () => {
    const path = join(dir, 'b.sock');
    await writeFile(path, 'not a socket');
    await expect(startSidecarFixture({ SIDECAR_SOCKET: path })).rejects.toThrow(/is not a socket/);
    expect((await stat(path)).isFile()).toBe(true);
  });

  it('refuses a relative socket path', async () => {
    await expect(startSidecarFixture({ SIDECAR_SOCKET: 'x.sock' })).rejects.toThrow(/absolute path/);
  });
});
