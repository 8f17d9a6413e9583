// Rewrites a `docker save` stream so a committed sandbox image carries no container env on disk.
// `docker commit` records the committing container's full config (`container_config`, with the
// sidecar token and user secrets in its Env) in the image JSON and in the legacy per-layer json;
// this stream filter drops those fields, renames the config to its new digest, and points
// manifest.json at it. Layers pass through untouched (streamed, never buffered). configOnlyArchive
// does the same without reading any layer, for an image whose layers the engine already has.
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

/** What the engine reports of an image: `docker image inspect` and `docker history`. */
export interface ImageFacts {
  Architecture: string;
  Os: string;
  Variant?: string;
  Created: string;
  DockerVersion?: string;
  Author?: string;
  Config: unknown;
  RootFS: { Type: string; Layers?: string[] };
}
export interface HistoryFact {
  Created: number;
  CreatedBy: string;
  Comment?: string;
  Size: number;
}

function ustarHeader(name: string): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write('0000644\0', 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  h.write(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, '0')}\0`,
    136,
    'ascii',
  );
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  return header(h, name, 0);
}

/**
 * A `docker load` archive of only a new config (no container config, the rest as inspected) and
 * a manifest naming the image's layers, which the engine already holds: it loads in milliseconds
 * and never reads a layer file (none is in the archive). Undefined when the history cannot say
 * which entries made a layer (a zero-size layer): use the full save -> scrub -> load then.
 */
export function configOnlyArchive(
  info: ImageFacts,
  history: HistoryFact[],
  repoTag: string,
): Buffer | undefined {
  const diffIds = info.RootFS.Layers ?? [];
  const entries = [...history].reverse();
  if (entries.filter((h) => h.Size > 0).length !== diffIds.length) return undefined;
  const config = {
    architecture: info.Architecture,
    os: info.Os,
    ...(info.Variant ? { variant: info.Variant } : {}),
    ...(info.Author ? { author: info.Author } : {}),
    ...(info.DockerVersion ? { docker_version: info.DockerVersion } : {}),
    created: info.Created,
    config: info.Config,
    history: entries.map((h) => ({
      created: new Date(h.Created * 1000).toISOString(),
      created_by: h.CreatedBy,
      ...(h.Comment ? { comment: h.Comment } : {}),
      ...(h.Size > 0 ? {} : { empty_layer: true }),
    })),
    rootfs: { type: info.RootFS.Type, diff_ids: diffIds },
  };
  const data = Buffer.from(JSON.stringify(config));
  const name = `${createHash('sha256').update(data).digest('hex')}.json`;
  const manifest = [{ Config: name, RepoTags: [repoTag], Layers: diffIds.map((_, i) => `${i}/layer.tar`) }];
  return Buffer.concat([
    ...file(ustarHeader(name), name, data),
    ...file(ustarHeader('manifest.json'), 'manifest.json', Buffer.from(JSON.stringify(manifest))),
    Buffer.alloc(BLOCK * 2),
  ]);
}
