// Rewrites a `docker save` stream so a committed sandbox image carries no container env on disk.
// `docker commit` records the committing container's full config (`container_config`, with the
// sidecar token and user secrets in its Env) in the image JSON and in the legacy per-layer json;
// this stream filter drops those fields, renames the config to its new digest, and points
// manifest.json at it. Layers pass through untouched (streamed, never buffered).
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

const BLOCK = 512;
const CONFIG_RE = /^[0-9a-f]{64}\.json$/;
const LEGACY_JSON_RE = /^[0-9a-f]{64}\/json$/;
const MAX_META = 16 * 1024 * 1024;

function readString(h: Buffer, off: number, len: number): string {
  const s = h.subarray(off, off + len);
  const end = s.indexOf(0);
  return s.subarray(0, end === -1 ? len : end).toString('utf8');
}

function entryName(h: Buffer): string {
  const name = readString(h, 0, 100);
  const magic = readString(h, 257, 6);
  const prefix = magic.startsWith('ustar') ? readString(h, 345, 155) : '';
  return prefix ? `${prefix}/${name}` : name;
}

function entrySize(h: Buffer): number {
  return Number.parseInt(readString(h, 124, 12).trim() || '0', 8);
}

/** A header like `template` for a regular file `name` of `size` bytes (name < 100 chars). */
function header(template: Buffer, name: string, size: number): Buffer {
  const h = Buffer.from(template);
  h.fill(0, 0, 100);
  h.write(name, 0, 100, 'utf8');
  h.fill(0, 345, 500);
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 12, 'ascii');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

function file(template: Buffer, name: string, data: Buffer): Buffer[] {
  const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
  return [header(template, name, data.length), data, Buffer.alloc(pad)];
}

function scrubImageJson(json: Record<string, unknown>): Record<string, unknown> {
  const { container_config: _cc, container: _c, ...rest } = json;
  return rest;
}

/** Filters a docker-save tar stream; `repoTag` becomes the loaded image's tag. */
export function scrubSavedImage(input: AsyncIterable<Buffer>, repoTag: string): Readable {
  async function* run(): AsyncGenerator<Buffer> {
    let buf = Buffer.alloc(0);
    const it = input[Symbol.asyncIterator]();
    let done = false;
    const fill = async (n: number): Promise<boolean> => {
      while (buf.length < n && !done) {
        const r = await it.next();
        if (r.done) done = true;
        else buf = buf.length === 0 ? Buffer.from(r.value) : Buffer.concat([buf, r.value]);
      }
      return buf.length >= n;
    };
    const take = (n: number): Buffer => {
      const out = buf.subarray(0, n);
      buf = buf.subarray(n);
      return out;
    };
    const renames = new Map<string, string>();
    let manifest: { template: Buffer; data: Buffer } | undefined;
    while (await fill(BLOCK)) {
      const h = take(BLOCK);
      if (h.every((b) => b === 0)) break;
      const name = entryName(h);
      const size = entrySize(h);
      const padded = size + ((BLOCK - (size % BLOCK)) % BLOCK);
      const meta =
        CONFIG_RE.test(name) ||
        LEGACY_JSON_RE.test(name) ||
        name === 'manifest.json' ||
        name === 'repositories';
      if (!meta || size > MAX_META) {
        yield Buffer.from(h);
        let left = padded;
        while (left > 0) {
          if (buf.length === 0 && !(await fill(1)))
            throw new Error('docker save stream ended inside an entry');
          const chunk = take(Math.min(left, buf.length));
          left -= chunk.length;
          yield Buffer.from(chunk);
        }
        continue;
      }
      if (!(await fill(padded))) throw new Error('docker save stream ended inside an entry');
      const data = Buffer.from(take(padded).subarray(0, size));
      if (name === 'manifest.json') {
        manifest = { template: Buffer.from(h), data };
      } else if (name === 'repositories') {
        // Legacy tag file; manifest.json's RepoTags carries the tag.
      } else {
        const clean = Buffer.from(JSON.stringify(scrubImageJson(JSON.parse(data.toString('utf8')))));
        let outName = name;
        if (CONFIG_RE.test(name)) {
          outName = `${createHash('sha256').update(clean).digest('hex')}.json`;
          renames.set(name, outName);
        }
        yield* file(h, outName, clean);
      }
    }
    if (!manifest) throw new Error('docker save stream has no manifest.json');
    const entries = JSON.parse(manifest.data.toString('utf8')) as Array<{
      Config: string;
      RepoTags: string[] | null;
    }>;
    for (const e of entries) {
      e.Config = renames.get(e.Config) ?? e.Config;
      e.RepoTags = [repoTag];
    }
    yield* file(manifest.template, 'manifest.json', Buffer.from(JSON.stringify(entries)));
    yield Buffer.alloc(BLOCK * 2);
  }
  return Readable.from(run(), { objectMode: false });
}
