// Test-only: a local server speaking the S3 wire protocol (s3rver: real SigV4 checks, multipart,
// objects as files in a directory we can scan), on 127.0.0.1 at a free port, with a bucket; and a
// TCP relay in front of it that can cut the connection mid-transfer (the store gone unreachable).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverCtor = new (opts: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('@20minutes/s3rver') as S3rverCtor;

export const S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface LocalS3 {
  endpoint: string;
  bucket: string;
  dir: string;
  /** Every stored file of the bucket (objects and s3rver's metadata), path → bytes. */
  files(): Promise<Map<string, Buffer>>;
  close(): Promise<void>;
}

export async function startLocalS3(): Promise<LocalS3> {
  const dir = await mkdtemp(join(tmpdir(), 'asbx-s3-'));
  const bucket = `snap-${randomBytes(4).toString('hex')}`;
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket }],
  });
  const addr = await server.run();
  return {
    endpoint: `http://127.0.0.1:${addr.port}`,
    bucket,
    dir,
    async files() {
      const out = new Map<string, Buffer>();
      const walk = async (d: string): Promise<void> => {
        for (const e of await readdir(d, { withFileTypes: true })) {
          const p = join(d, e.name);
          if (e.isDirectory()) await walk(p);
          else out.set(p, await readFile(p));
        }
      };
      await walk(join(dir, bucket)).catch(() => {});
      return out;
    },
    async close() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A relay to `target` (host:port); `cutAfter(n)` kills every connection once n bytes went up and refuses new ones until `restore()`. */
export interface CuttingRelay {
  endpoint: string;
  cutAfter(bytes: number): void;
  /** Resolves when the cut happened. */
  cut: Promise<void>;
  restore(): void;
  close(): Promise<void>;
}

export async function startRelay(targetEndpoint: string): Promise<CuttingRelay> {
  const target = new URL(targetEndpoint);
  const sockets = new Set<Socket>();
  let budget = Number.POSITIVE_INFINITY;
  let down = false;
  let onCut: () => void = () => {};
  const relay: Partial<CuttingRelay> = {};
  const arm = () => {
    relay.cut = new Promise<void>((r) => {
      onCut = r;
    });
  };
  arm();
  const killAll = () => {
    down = true;
    for (const s of sockets) s.destroy();
    sockets.clear();
    onCut();
  };
  const server: Server = createServer((client) => {
    if (down) return client.destroy();
    const up = connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(up);
    client.on('data', (d: Buffer) => {
      budget -= d.length;
      if (budget <= 0) return killAll();
      up.write(d);
    });
    up.on('data', (d) => client.write(d));
    const end = () => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
    };
    client.on('close', end).on('error', end);
    up.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(relay, {
    endpoint: `http://127.0.0.1:${port}`,
    cutAfter(bytes: number) {
      budget = bytes;
    },
    restore() {
      budget = Number.POSITIVE_INFINITY;
      down = false;
      arm();
    },
    async close() {
      killAll();
      await new Promise<void>((r) => server.close(() => r()));
    },
  }) as CuttingRelay;
}
