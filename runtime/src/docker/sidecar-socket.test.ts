// The socket directory of a sandbox without a network: made 0700 for the operator's user; a
// symlink, a directory open to others, or an operator running as the agent's uid is refused.
import { chmod, mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareSocketDir, removeSocketDir, socketDir } from './sidecar-socket.ts';

let root: string;
beforeAll(async () => {
  root = join(await mkdtemp(join(tmpdir(), 'sock-dir-')), 'r');
});
afterAll(() => rm(join(root, '..'), { recursive: true, force: true }));

describe('prepareSocketDir', () => {
  it('makes <root>/<id> 0700 (idempotently) and removeSocketDir takes it away', async () => {
    const dir = await prepareSocketDir(root, 'sbx-a', 1000);
    expect(dir).toBe(socketDir(root, 'sbx-a'));
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await prepareSocketDir(root, 'sbx-a', 1000)).toBe(dir);
    await removeSocketDir(root, 'sbx-a');
    await expect(stat(dir)).rejects.toThrow(/ENOENT/);
  });

  it('refuses a symlink or a directory others can enter', async () => {
    await mkdir(join(root, 'elsewhere'), { mode: 0o700 });
    await symlink(join(root, 'elsewhere'), join(root, 'sbx-link'));
    await expect(prepareSocketDir(root, 'sbx-link', 1000)).rejects.toThrow(/not a 0700 directory/);
    await mkdir(join(root, 'sbx-open'));
    await chmod(join(root, 'sbx-open'), 0o755);
    await expect(prepareSocketDir(root, 'sbx-open', 1000)).rejects.toThrow(/not a 0700 directory/);
  });

  it("refuses when the operator runs as the agent's uid", async () => {
    await expect(prepareSocketDir(root, 'sbx-b', process.getuid?.() ?? 0)).rejects.toThrow(
      /the sandbox agent's uid/,
    );
  });
});
