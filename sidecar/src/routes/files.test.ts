// POST /files/read, /files/write and /files/list: round trip, ownership, confinement (incl. symlink escapes), bad paths.

import { createHash } from 'node:crypto';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

let fx: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture();
});
afterAll(() => fx.close());

const read = (body: unknown) => fx.call('POST', '/files/read', body);
const write = (body: unknown) => fx.call('POST', '/files/write', body);
const list = (body: unknown) => fx.call('POST', '/files/list', body);

describe('files', () => {
  it('writes and reads back a file, creating parents owned by the agent user', async () => {
    const content = 'héllo\nworld\n';
    const w = await write({ path: 'a/b/c.txt', content });
    expect(w.status).toBe(200);
    expect(w.json).toEqual({
      success: true,
      data: { hash: createHash('sha256').update(content).digest('hex'), size: Buffer.byteLength(content) },
    });
    const st = await stat(join(fx.workspace, 'a/b/c.txt'));
    expect([st.uid, st.gid]).toEqual([1000, 1000]);
    expect((await stat(join(fx.workspace, 'a'))).uid).toBe(1000);
    const r = await read({ path: join(fx.workspace, 'a/b/c.txt') });
    expect(r.status).toBe(200);
    expect(r.json.success).toBe(true);
    expect(r.json.data.content).toBe(content);
  });

  it('overwrites (truncates) an existing file and supports base64 for binary content', async () => {
    await write({ path: 'bin.dat', content: 'a much longer first version' });
    const bytes = Buffer.from([0, 255, 1, 254]);
    await write({ path: 'bin.dat', content: bytes.toString('base64'), encoding: 'base64' });
    expect(await readFile(join(fx.workspace, 'bin.dat'))).toEqual(bytes);
    const r = await read({ path: 'bin.dat', encoding: 'base64' });
    expect(Buffer.from(r.json.data.content, 'base64')).toEqual(bytes);
  });

  it('refuses paths outside the workspace with 403', async () => {
    for (const path of ['../outside.txt', '/etc/passwd', 'a/../../etc/passwd']) {
      const r = await read({ path });
      expect(r.status).toBe(403);
      expect(r.json.error.code).toBe('PATH_OUTSIDE_WORKSPACE');
    }
    expect((await write({ path: '/tmp/escape.txt', content: 'x' })).status).toBe(403);
  });

  it('refuses symlink escapes for read and write, and creates nothing outside', async () => {
    const outsideDir = join(tmpdir(), `sidecar-outside-${process.pid}`);
    await mkdir(outsideDir, { recursive: true });
    await writeFile(join(outsideDir, 'secret.txt'), 'top secret');
    await symlink(join(outsideDir, 'secret.txt'), join(fx.workspace, 'link.txt'));
    await symlink(outsideDir, join(fx.workspace, 'linkdir'));
    const r = await read({ path: 'link.txt' });
    expect(r.status).toBe(403);
    expect(JSON.stringify(r.json)).not.toContain('top secret');
    expect((await read({ path: 'linkdir/secret.txt' })).status).toBe(403);
    expect((await write({ path: 'link.txt', content: 'pwned' })).status).toBe(403);
    expect((await write({ path: 'linkdir/new.txt', content: 'pwned' })).status).toBe(403);
    expect((await write({ path: 'linkdir/deeper/new.txt', content: 'pwned' })).status).toBe(403);
    expect(await readFile(join(outsideDir, 'secret.txt'), 'utf8')).toBe('top secret');
    await expect(stat(join(outsideDir, 'new.txt'))).rejects.toThrow();
    await expect(stat(join(outsideDir, 'deeper'))).rejects.toThrow();
  });

  it('follows symlinks that stay inside the workspace', async () => {
    await write({ path: 'real.txt', content: 'inside' });
    await symlink(join(fx.workspace, 'real.txt'), join(fx.workspace, 'inner-link.txt'));
    expect((await read({ path: 'inner-link.txt' })).json.data.content).toBe('inside');
  });

  it('answers missing files with 404, directories and bad bodies with 400', async () => {
    expect((await read({ path: 'nope.txt' })).json.error.code).toBe('FILE_NOT_FOUND');
    await mkdir(join(fx.workspace, 'dir'), { recursive: true });
    expect((await read({ path: 'dir' })).json.error.code).toBe('NOT_A_FILE');
    expect((await read({})).status).toBe(400);
    expect((await write({ path: 'x.txt' })).status).toBe(400);
    expect((await read({ path: 'a\u0000b' })).status).toBe(400);
  });

  it('lists a directory (symlinks reported, not followed) and refuses escapes and missing dirs', async () => {
    await write({ path: 'ls/one.txt', content: '1' });
    await write({ path: 'ls/sub/two.txt', content: '22' });
    const outsideDir = join(tmpdir(), `sidecar-outside-ls-${process.pid}`);
    await mkdir(outsideDir, { recursive: true });
    await writeFile(join(outsideDir, 'hidden.txt'), 'x');
    await symlink(outsideDir, join(fx.workspace, 'ls', 'out'));
    const r = await list({ path: 'ls' });
    expect(r.status).toBe(200);
    expect(r.json.data.path).toBe('ls');
    expect(r.json.data.truncated).toBe(false);
    const byName = Object.fromEntries(
      r.json.data.entries.map((e: { name: string; type: string; size: number }) => [e.name, e]),
    );
    expect(Object.keys(byName)).toEqual(['one.txt', 'out', 'sub']);
    expect(byName['one.txt']).toMatchObject({ type: 'file', size: 1 });
    expect(byName.sub.type).toBe('directory');
    expect(byName.out.type).toBe('symlink');
    expect((await list({})).json.data.path).toBe('.');
    for (const path of ['ls/out', '..', '/etc', 'ls/../../']) {
      const e = await list({ path });
      expect(e.status).toBe(403);
      expect(JSON.stringify(e.json)).not.toContain('hidden.txt');
    }
    expect((await list({ path: 'no/such/dir' })).status).toBe(404);
    await expect(stat(join(fx.workspace, 'no'))).rejects.toThrow();
    expect((await list({ path: 'ls/one.txt' })).status).toBe(400);
  });
});
