// The object store layer on its own: sealed objects (round trip at chunk edges; a flipped bit, a
// truncation, a reordering or another binding refused), the destination allow-list, and the S3
// store against a local server speaking the S3 wire protocol (s3rver): nothing readable in the
// bucket, a cut mid-upload fails clearly and leaves nothing, a retry works, a tampered object is
// refused with nothing written.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnapshotS3ConfigSchema } from './config.ts';
import { checkDestination, refusedAddress } from './destination.ts';
import { S3SnapshotStore } from './s3-store.ts';
import { CHUNK, openStream, SealedObjectError, sealedSize, sealStream } from './sealed-stream.ts';
import {
  type CuttingRelay,
  type LocalS3,
  S3_CREDENTIALS,
  startLocalS3,
  startRelay,
} from './testing/s3-server.ts';

const key = randomBytes(32);
const seal = async (pt: Buffer, binding = 'b') => buffer(Readable.from([pt]).pipe(sealStream(key, binding)));
const open = async (ct: Buffer, binding = 'b', k: Uint8Array = key) => {
  const out = new PassThrough();
  const [, got] = await Promise.all([
    pipeline(Readable.from([ct]), openStream(k, binding), out),
    buffer(out),
  ]);
  return got;
};

describe('sealed objects', () => {
  it('round-trips at the chunk edges, and the size is what sealedSize says', async () => {
    for (const n of [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17]) {
      const pt = randomBytes(n);
      const ct = await seal(pt);
      expect(ct.length).toBe(sealedSize(n));
      expect((await open(ct)).equals(pt)).toBe(true);
    }
  });

  it('refuses a flipped bit, a truncation, a dropped or reordered chunk, another binding, another key', async () => {
    const pt = randomBytes(2 * CHUNK + 100);
    const ct = await seal(pt);
    const flipped = Buffer.from(ct);
    flipped[ct.length - 50]! ^= 1;
    const chunk = CHUNK + 16;
    const head = ct.subarray(0, 40);
    const c0 = ct.subarray(40, 40 + chunk);
    const c1 = ct.subarray(40 + chunk, 40 + 2 * chunk);
    const last = ct.subarray(40 + 2 * chunk);
    for (const bad of [
      flipped,
      ct.subarray(0, ct.length - 1),
      Buffer.concat([head, c0, c1]),
      Buffer.concat([head, c0, last]),
      Buffer.concat([head, c1, c0, last]),
    ]) {
      await expect(open(bad)).rejects.toBeInstanceOf(SealedObjectError);
    }
    await expect(open(ct, 'another-binding')).rejects.toBeInstanceOf(SealedObjectError);
    await expect(open(ct, 'b', randomBytes(32))).rejects.toBeInstanceOf(SealedObjectError);
  });
});

describe('destination allow-list', () => {
  const strict = { allowHttp: false, allowPrivateHosts: [] };
  it('refuses plain http, private, loopback, CGNAT, link-local and metadata addresses', async () => {
    const refused: Array<[string, RegExp]> = [
      ['http://8.8.8.8', /plain http.*SNAPSHOT_S3_ALLOW_HTTP/],
      ['https://10.0.0.5', /private, loopback or CGNAT.*SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS/],
      ['https://127.0.0.1:9000', /private, loopback/],
      ['https://100.64.1.1', /CGNAT/],
      ['https://[::1]', /private, loopback/],
      ['https://[::ffff:192.168.1.1]', /private/],
      ['https://169.254.169.254', /link-local, metadata/],
      ['https://[fd00:ec2::254]', /link-local, metadata/],
      ['https://168.63.129.16', /metadata/],
      ['https://localhost:9000', /127\.0\.0\.1|::1/],
      ['ftp://8.8.8.8', /not http/],
      ['https://user:pw@8.8.8.8', /credentials go in/],
    ];
    for (const [url, why] of refused) {
      const err = (await checkDestination(url, strict).catch((e: unknown) => e)) as Error & { code: string };
      expect(err, url).toMatchObject({ code: 'CONFIG_INVALID' });
      expect(err.message, url).toMatch(why);
      expect(err.message).toMatch(/SNAPSHOT_S3_ENDPOINT/);
    }
  });

  it('lets a listed private host through, never a listed metadata address', async () => {
    const p = { allowHttp: true, allowPrivateHosts: ['127.0.0.1', '169.254.169.254', 'localhost'] };
    await expect(checkDestination('http://127.0.0.1:9000', p)).resolves.toBeInstanceOf(URL);
    await expect(checkDestination('http://localhost:9000', p)).resolves.toBeInstanceOf(URL);
    await expect(checkDestination('http://169.254.169.254', p)).rejects.toThrow(/never receives snapshots/);
    expect(refusedAddress('s3.example', '52.216.0.1', strict)).toBeUndefined();
    expect(refusedAddress('s3.example', '10.1.1.1', strict)).toMatch(/private/);
  });
});

describe('S3 store against a local S3 server', () => {
  let s3: LocalS3;
  let relay: CuttingRelay;
  let dir: string;
  const log = pino({ level: 'silent' });
  const cfg = (endpoint: string, bucket: string) =>
    SnapshotS3ConfigSchema.parse({
      endpoint,
      bucket,
      ...S3_CREDENTIALS,
      allowHttp: true,
      allowPrivateHosts: ['127.0.0.1'],
      partSizeBytes: 5 * 1024 * 1024,
      requestTimeoutMs: 10_000,
    });
  beforeAll(async () => {
    s3 = await startLocalS3();
    relay = await startRelay(s3.endpoint);
    dir = await mkdtemp(join(tmpdir(), 'asbx-s3t-'));
  });
  afterAll(async () => {
    await relay?.close();
    await s3?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses at open: a missing bucket, and an endpoint outside the allow-list', async () => {
    await expect(S3SnapshotStore.open(cfg(s3.endpoint, 'no-such-bucket'), key, log)).rejects.toThrow(
      /no such bucket/,
    );
    const strict = { ...cfg(s3.endpoint, s3.bucket), allowPrivateHosts: [] };
    await expect(S3SnapshotStore.open(strict, key, log)).rejects.toThrow(/private, loopback/);
    await expect(S3SnapshotStore.open({ ...strict, allowHttp: false }, key, log)).rejects.toThrow(
      /plain http/,
    );
  });

  it('stores sealed objects under opaque names: the planted content is nowhere in the bucket', async () => {
    const store = await S3SnapshotStore.open(cfg(s3.endpoint, s3.bucket), key, log);
    const planted = `PLANTED-${randomBytes(8).toString('hex')}`;
    const file = join(dir, 'ws.tar');
    await writeFile(file, Buffer.concat([Buffer.from(planted.repeat(1000)), randomBytes(1024 * 1024)]));
    const name = store.newName();
    expect(name).toMatch(/^agent-sandbox\/[0-9a-f]{32}$/);
    const size = await store.put(name, { sandboxId: 'sbx-x', kind: 'workspace' }, file);
    expect(size).toBe(sealedSize((await stat(file)).size));
    for (const [path, bytes] of await s3.files()) {
      expect(bytes.includes(planted), path).toBe(false);
      expect(path).not.toMatch(/sbx-x|workspace/);
    }
    await store.get(name, { sandboxId: 'sbx-x', kind: 'workspace' }, join(dir, 'back.tar'));
    expect((await readFile(join(dir, 'back.tar'))).equals(await readFile(file))).toBe(true);
    // Another binding (another sandbox, another kind) does not open it, and nothing is written.
    await expect(
      store.get(name, { sandboxId: 'sbx-y', kind: 'workspace' }, join(dir, 'swap.tar')),
    ).rejects.toMatchObject({ code: 'SNAPSHOT_CORRUPT' });
    await expect(stat(join(dir, 'swap.tar'))).rejects.toThrow();
    await expect(stat(join(dir, 'swap.tar.tmp'))).rejects.toThrow();
    await store.remove([name]);
    await expect(
      store.get(name, { sandboxId: 'sbx-x', kind: 'workspace' }, join(dir, 'gone.tar')),
    ).rejects.toMatchObject({ code: 'SNAPSHOT_CORRUPT' });
    store.close();
  });

  it('a tampered object is refused on download; nothing is written', async () => {
    const store = await S3SnapshotStore.open(cfg(s3.endpoint, s3.bucket), key, log);
    const file = join(dir, 't.tar');
    await writeFile(file, randomBytes(3 * CHUNK));
    const name = store.newName();
    await store.put(name, { sandboxId: 'sbx-t', kind: 'image' }, file);
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    const stored = Buffer.concat(
      [...(await s3.files()).entries()].filter(([p]) => p.endsWith('._S3rver_object')).map(([, b]) => b),
    );
    expect(stored.length).toBeGreaterThan(0);
    // The attacker with write access to the bucket flips one byte in the middle.
    const got = await buffer(
      (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: name }))).Body as Readable,
    );
    got[Math.floor(got.length / 2)]! ^= 0x20;
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: name, Body: got }));
    await expect(
      store.get(name, { sandboxId: 'sbx-t', kind: 'image' }, join(dir, 'bad.tar')),
    ).rejects.toMatchObject({
      code: 'SNAPSHOT_CORRUPT',
      message: expect.stringMatching(/failed authentication/),
    });
    await expect(stat(join(dir, 'bad.tar'))).rejects.toThrow();
    await expect(stat(join(dir, 'bad.tar.tmp'))).rejects.toThrow();
    client.destroy();
    store.close();
  });

  it('the store cut off mid-upload: a clear failure, the local file kept, no object left; a retry works', async () => {
    const store = await S3SnapshotStore.open(cfg(relay.endpoint, s3.bucket), key, log);
    const file = join(dir, 'big.tar');
    const content = randomBytes(7 * 1024 * 1024);
    await writeFile(file, content);
    const before = new Set((await s3.files()).keys());
    const name = store.newName();
    relay.cutAfter(3 * 1024 * 1024);
    const err = await store
      .put(name, { sandboxId: 'sbx-c', kind: 'image' }, file)
      .catch((e: unknown) => e as Error);
    await relay.cut;
    expect(err).toMatchObject({ code: 'SNAPSHOT_STORE_UNAVAILABLE' });
    expect((err as Error).message).toMatch(/the local copy is kept/);
    expect((await readFile(file)).equals(content)).toBe(true);
    relay.restore();
    const after = [...(await s3.files()).keys()].filter(
      (p) => !before.has(p) && p.endsWith('._S3rver_object'),
    );
    expect(after).toEqual([]);
    await store.put(name, { sandboxId: 'sbx-c', kind: 'image' }, file);
    await store.get(name, { sandboxId: 'sbx-c', kind: 'image' }, join(dir, 'big-back.tar'));
    expect((await readFile(join(dir, 'big-back.tar'))).equals(content)).toBe(true);
    store.close();
  });
});
