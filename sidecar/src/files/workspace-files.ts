// Reads and writes files confined to the workspace. Confinement is checked on the file actually opened
// (its /proc/self/fd link), so a symlink swapped in after a check cannot lead the root sidecar outside.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, readlink, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { SidecarError } from '../errors.ts';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

export interface WorkspaceFilesOptions {
  root: string;
  maxFileBytes: number;
  /** Owner of files and directories the sidecar creates (the agent user), when running as root. */
  owner?: { uid: number; gid: number };
}

const outside = (p: string) =>
  new SidecarError(
    'PATH_OUTSIDE_WORKSPACE',
    `path '${p}' is outside the workspace; use a path inside it`,
    403,
  );

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** One directory entry as `/files/list` reports it (symlinks are reported, never followed). */
export interface WorkspaceEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mtimeMs: number;
}

/** At most this many entries per listing (sorted by name); `truncated` says when more exist. */
export const MAX_LIST_ENTRIES = 1000;

export class WorkspaceFiles {
  #realRoot: string | undefined;
  constructor(private readonly opts: WorkspaceFilesOptions) {}

  async #root(): Promise<string> {
    this.#realRoot ??= await realpath(this.opts.root);
    return this.#realRoot;
  }

  /** Lexical resolution first: `..` escapes are refused before anything touches the disk. */
  #lexical(path: string): string {
    if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) {
      throw new SidecarError('INVALID_REQUEST', 'path must be a non-empty string without NUL bytes', 400);
    }
    const abs = resolve(this.opts.root, path);
    if (!isInside(resolve(this.opts.root), abs)) throw outside(path);
    return abs;
  }

  async #verify(fh: FileHandle, path: string): Promise<string> {
    const real = await readlink(`/proc/self/fd/${fh.fd}`);
    if (!isInside(await this.#root(), real)) {
      await fh.close();
      throw outside(path);
    }
    return real;
  }

  async read(path: string): Promise<Buffer> {
    const abs = this.#lexical(path);
    let fh: FileHandle;
    try {
      // O_NONBLOCK: opening a FIFO must not hang the request.
      fh = await open(abs, O_RDONLY | O_NONBLOCK);
    } catch (err) {
      throw fsError(err, path);
    }
    await this.#verify(fh, path);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new SidecarError('NOT_A_FILE', `'${path}' is not a regular file`, 400);
      if (st.size > this.opts.maxFileBytes) {
        throw new SidecarError(
          'FILE_TOO_LARGE',
          `'${path}' is ${st.size} bytes; the limit is ${this.opts.maxFileBytes}`,
          413,
        );
      }
      return await fh.readFile();
    } finally {
      await fh.close().catch(() => {});
    }
  }

  /** The entries of a workspace directory ('' or '.' is the root), walked and verified like writes. */
  async list(path: string): Promise<{ path: string; entries: WorkspaceEntry[]; truncated: boolean }> {
    const abs = path === '' ? resolve(this.opts.root) : this.#lexical(path);
    const dir = await this.#openDir(abs, path, false);
    try {
      const base = `/proc/self/fd/${dir.fd}`;
      const names = (await readdir(base)).sort();
      const entries: WorkspaceEntry[] = [];
      for (const name of names.slice(0, MAX_LIST_ENTRIES)) {
        const st = await lstat(`${base}/${name}`).catch(() => undefined);
        if (!st) continue; // removed meanwhile
        const type = st.isFile()
          ? 'file'
          : st.isDirectory()
            ? 'directory'
            : st.isSymbolicLink()
              ? 'symlink'
              : 'other';
        entries.push({ name, type, size: st.size, mtimeMs: Math.trunc(st.mtimeMs) });
      }
      const rel = relative(resolve(this.opts.root), abs);
      return { path: rel === '' ? '.' : rel, entries, truncated: names.length > MAX_LIST_ENTRIES };
    } catch (err) {
      throw fsError(err, path);
    } finally {
      await dir.close().catch(() => {});
    }
  }

  /** Opens (creating as needed) each directory from the root down, verifying each one it enters. */
  async #openDir(dirAbs: string, path: string, create = true): Promise<FileHandle> {
    const root = await this.#root();
    const rel = relative(resolve(this.opts.root), dirAbs);
    let dir = await open(root, O_RDONLY | O_DIRECTORY);
    for (const name of rel.split(sep).filter(Boolean)) {
      const next = `/proc/self/fd/${dir.fd}/${name}`;
      let child: FileHandle;
      try {
        child = await open(next, O_RDONLY | O_DIRECTORY);
      } catch (err) {
        if (!create || (err as NodeJS.ErrnoException).code !== 'ENOENT') {
          await dir.close();
          throw fsError(err, path);
        }
        try {
          await mkdir(next);
          child = await open(next, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
          if (this.opts.owner) await child.chown(this.opts.owner.uid, this.opts.owner.gid);
        } catch (e) {
          await dir.close();
          throw fsError(e, path);
        }
      }
      await dir.close();
      await this.#verify(child, path);
      dir = child;
    }
    return dir;
  }

  async write(path: string, content: Buffer): Promise<{ hash: string; size: number }> {
    const abs = this.#lexical(path);
    if (abs === resolve(this.opts.root))
      throw new SidecarError('NOT_A_FILE', 'cannot write to the workspace root', 400);
    if (content.length > this.opts.maxFileBytes) {
      throw new SidecarError(
        'FILE_TOO_LARGE',
        `content is ${content.length} bytes; the limit is ${this.opts.maxFileBytes}`,
        413,
      );
    }
    const dir = await this.#openDir(resolve(abs, '..'), path);
    const target = `/proc/self/fd/${dir.fd}/${abs.slice(abs.lastIndexOf(sep) + 1)}`;
    let fh: FileHandle;
    let created = false;
    try {
      try {
        fh = await open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o644);
        created = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // It exists (maybe as a symlink): follow it, then check where it really landed.
        fh = await open(target, O_WRONLY | O_NONBLOCK);
      }
    } catch (err) {
      throw fsError(err, path);
    } finally {
      await dir.close();
    }
    await this.#verify(fh, path);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new SidecarError('NOT_A_FILE', `'${path}' is not a regular file`, 400);
      if (created && this.opts.owner) await fh.chown(this.opts.owner.uid, this.opts.owner.gid);
      await fh.truncate(0);
      await fh.write(content, 0, content.length, 0);
    } finally {
      await fh.close().catch(() => {});
    }
    return { hash: createHash('sha256').update(content).digest('hex'), size: content.length };
  }
}

function fsError(err: unknown, path: string): SidecarError {
  if (err instanceof SidecarError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new SidecarError('FILE_NOT_FOUND', `'${path}' does not exist`, 404);
  if (code === 'EISDIR') return new SidecarError('NOT_A_FILE', `'${path}' is a directory`, 400);
  if (code === 'ENOTDIR')
    return new SidecarError('NOT_A_FILE', `a parent of '${path}' is not a directory`, 400);
  if (code === 'ELOOP') return new SidecarError('PATH_OUTSIDE_WORKSPACE', `'${path}' is a symlink loop`, 403);
  if (code === 'EACCES' || code === 'EPERM')
    return new SidecarError('FORBIDDEN', `no permission for '${path}'`, 403);
  return new SidecarError('INTERNAL', `file operation on '${path}' failed: ${(err as Error).message}`, 500);
}
