// Security (hostile local user who can write the directory): the atomic writers' temp file cannot
// be redirected. The old keystore writer wrote to `<file>.tmp-<pid>` following symlinks, so a
// symlink planted there sent the key into the attacker's file and then became the keystore.
import { lstat, mkdtemp, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { createExclusive, writeFileAtomic } from './atomic-file.ts';
import { createKeystore, KEYSTORE_DEV_FILE } from './keystore.ts';

const tmp = () => mkdtemp(join(tmpdir(), 'sdk-atomic-'));

describe('hostile local user: atomic writes', () => {
  it('a symlink planted at the keystore temp name gets nothing: the key lands in a new 0600 file', async () => {
    const dir = await tmp();
    const loot = join(dir, 'loot');
    await writeFile(loot, '', { mode: 0o666 });
    const file = join(dir, KEYSTORE_DEV_FILE);
    // The names a writer could predict: the pid, as the old one used.
    await symlink(loot, `${file}.tmp-${process.pid}`);
    const pk = generatePrivateKey();
    await createKeystore({ path: dir, privateKey: pk });
    expect(await readFile(loot, 'utf8')).toBe('');
    const st = await lstat(file);
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect((await readFile(file, 'utf8')).trim()).toBe(pk);
    expect(await readlink(`${file}.tmp-${process.pid}`)).toBe(loot); // left alone
  });

  it('createExclusive refuses a symlink (dangling or not) and an existing file, touching neither target', async () => {
    const dir = await tmp();
    const target = join(dir, 'target');
    await writeFile(target, 'theirs');
    await symlink(target, join(dir, 'link'));
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    for (const name of ['link', 'dangling', 'target']) {
      await expect(createExclusive(join(dir, name), 0o600)).rejects.toMatchObject({ code: 'EEXIST' });
    }
    expect(await readFile(target, 'utf8')).toBe('theirs');
    await expect(stat(join(dir, 'nowhere'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('writeFileAtomic gives the exact mode whatever the umask, and replaces a symlink at the target rather than writing through it', async () => {
    const dir = await tmp();
    const target = join(dir, 'other');
    await writeFile(target, 'theirs');
    await symlink(target, join(dir, 'state.json'));
    const old = process.umask(0o077);
    try {
      await writeFileAtomic(join(dir, 'state.json'), 'mine', 0o644);
    } finally {
      process.umask(old);
    }
    expect(await readFile(target, 'utf8')).toBe('theirs');
    const st = await lstat(join(dir, 'state.json'));
    expect(st.isFile() && (st.mode & 0o777) === 0o644).toBe(true);
  });
});
