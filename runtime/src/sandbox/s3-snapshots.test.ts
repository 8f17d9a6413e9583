// Cold tier and snapshots in S3-compatible storage, on the real engine against a local server
// speaking the S3 wire protocol (s3rver on 127.0.0.1), reached through a relay that can cut it
// off: warm -> cold -> resume through the bucket with files intact (the first upload cut midway:
// a clear failure, still warm, nothing lost, the next tick succeeds); nothing readable in the
// bucket; a snapshot sent there restores and forks; a tampered or swapped object is refused on
// restore and the sandbox left as it was; delete removes the objects; an endpoint outside the
// allow-list is refused when the manager opens.
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  type CuttingRelay,
  type LocalS3,
  S3_CREDENTIALS,
  startLocalS3,
  startRelay,
} from '../snapshot-store/testing/s3-server.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

// Real containers and full-image `docker save` rounds on a shared 2-core machine.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 120_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000b3';
const PLANTED = `planted-${randomBytes(12).toString('hex')}`;
const SECRET = `sk-live-${randomBytes(12).toString('hex')}`;
let s3: LocalS3;
let relay: CuttingRelay;
let rig: TestRig;
let client: S3Client;
let n = 0;

const s3Config = (endpoint: string, bucket: string) => ({
  endpoint,
  bucket,
  ...S3_CREDENTIALS,
  allowHttp: true,
  allowPrivateHosts: ['127.0.0.1'],
  requestTimeoutMs: 20_000,
});

beforeAll(async () => {
  s3 = await startLocalS3();
  relay = await startRelay(s3.endpoint);
  client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3_CREDENTIALS,
  });
  rig = await makeRig(image, {
    gcHotRetentionSeconds: 100,
    gcWarmRetentionSeconds: 200,
    gcColdRetentionSeconds: 300,
    snapshotS3: s3Config(relay.endpoint, s3.bucket),
  });
});
afterAll(async () => {
  await rig?.cleanup();
  client?.destroy();
  await relay?.close();
  await s3?.close();
});

const create = (extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 3, callId: `s3-${++n}`, ...extra });

/** A running sandbox with the planted file in its workspace and a secret in its env. */
async function planted() {
  const rec = await create();
  await sidecarExec(
    rig.manager.sidecarEndpoint(rec.id),
    `mkdir -p /home/agent/proj && echo ${PLANTED} > /home/agent/proj/a.txt`,
  );
  await rig.manager.injectSecrets(rec.id, { API_KEY: SECRET });
  return rig.manager.get(rec.id);
}

async function toCold(id: string) {
  await rig.manager.stop(id);
  const t = rig.manager.get(id).tierSince!;
  expect((await rig.manager.gcTick(t + 100_000)).acted).toContainEqual({ id, action: 'hot->warm' });
  return rig.manager.gcTick(rig.manager.get(id).tierSince! + 200_000);
}

/** Object names in the bucket (from the server's own files: what is really stored). */
async function storedObjects(): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const [p, b] of await s3.files()) if (p.endsWith('._S3rver_object')) out.set(p, b);
  return out;
}

const getObject = async (key: string) =>
  buffer((await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body as Readable);
const putObject = (key: string, body: Buffer) =>
  client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));

async function localArchives(dir: string | null): Promise<string[]> {
  if (!dir) return [];
  return (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.tar'));
}

describe('cold tier in the bucket', () => {
  it('warm -> cold through the bucket (first upload cut midway: still warm, nothing lost; the retry works) -> resume with files intact; nothing readable there', async () => {
    const rec = await planted();
    await rig.manager.stop(rec.id);
    const t = rig.manager.get(rec.id).tierSince!;
    await rig.manager.gcTick(t + 100_000);
    const warm = rig.manager.get(rec.id);
    expect(warm.tier).toBe('warm');

    // The store goes away 20 MB into the upload.
    relay.cutAfter(20 * 1024 * 1024);
    const failed = await rig.manager.gcTick(warm.tierSince! + 200_000);
    await relay.cut;
    expect(failed.acted).toEqual([]);
    expect(failed.errors).toHaveLength(1);
    expect(failed.errors[0]!.error).toMatch(
      /uploading a snapshot to bucket .* failed.*the local copy is kept/,
    );
    const still = rig.manager.get(rec.id);
    expect(still).toMatchObject({ state: 'stopped', tier: 'warm' });
    expect(still.snapshotRemote ?? null).toBeNull();
    expect(await rig.manager.driver.inspectImage(still.snapshotImageId!)).toBeDefined();
    expect(await localArchives(still.snapshotArchiveDir)).toEqual(['workspace.tar']);
    // What did arrive before the cut (the small workspace) is named for deletion at the next try.
    const left = [...(await storedObjects()).keys()].map((p) =>
      p.slice(join(s3.dir, s3.bucket).length + 1).replace(/\._S3rver_object$/, ''),
    );
    expect(left.every((k) => still.snapshotOrphans?.includes(k))).toBe(true);

    // Back: the next tick moves it.
    relay.restore();
    const ok = await rig.manager.gcTick(warm.tierSince! + 200_000);
    expect(ok).toEqual({ acted: [{ id: rec.id, action: 'warm->cold' }], errors: [] });
    const cold = rig.manager.get(rec.id);
    expect(cold.tier).toBe('cold');
    expect(await rig.manager.driver.inspectImage(cold.snapshotImageId!)).toBeUndefined();
    expect(await localArchives(cold.snapshotArchiveDir)).toEqual([]);
    expect(cold.snapshotRemote).toMatchObject({ workspace: expect.any(String), image: expect.any(String) });
    expect(cold.snapshotOrphans ?? []).toEqual([]);

    // Nothing readable: no planted content, secret or token in any stored file; names opaque.
    const stored = await s3.files();
    expect([...stored.keys()].filter((p) => p.endsWith('._S3rver_object'))).toHaveLength(2);
    for (const [p, bytes] of stored) {
      for (const needle of [PLANTED, SECRET, rec.token, rec.id, owner, owner.slice(2)])
        expect(bytes.includes(needle), `${needle} in ${p}`).toBe(false);
      expect(p).not.toMatch(new RegExp(`${rec.id}|${owner.slice(2)}|workspace|image`));
    }
    for (const name of [cold.snapshotRemote!.workspace!, cold.snapshotRemote!.image!])
      expect(name).toMatch(/^agent-sandbox\/[0-9a-f]{32}$/);

    const back = await rig.manager.resume(rec.id);
    expect(back).toMatchObject({ id: rec.id, token: rec.token, state: 'running' });
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/proj/a.txt')).stdout,
    ).toBe(`${PLANTED}\n`);
    // The archives are stale now: gone from the bucket too.
    expect(rig.manager.get(rec.id).snapshotRemote).toBeNull();
    expect((await storedObjects()).size).toBe(0);
    await rig.manager.delete(rec.id);
  });
});

describe('snapshots in the bucket', () => {
  it('POST snapshot sends the workspace there; a fork and a restore come from it; a swapped or tampered object is refused; delete removes the objects', async () => {
    relay.restore();
    const src = await planted();
    const snap = await rig.manager.snapshot(src.id);
    expect(snap.storage).toBe('object_store');
    const afterSnap = rig.manager.get(src.id);
    expect(afterSnap.snapshotRemote).toMatchObject({
      imageId: snap.snapshotImageId,
      workspace: expect.any(String),
    });
    expect(await localArchives(afterSnap.snapshotArchiveDir)).toEqual([]);

    // A fork from the snapshot: its workspace fetched from the bucket.
    const fork = await create({ fromSnapshot: snap.snapshotImageId });
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(fork.id), 'cat /home/agent/proj/a.txt')).stdout,
    ).toBe(`${PLANTED}\n`);

    // A second sandbox, cold in the bucket: the victim of the swap.
    const victim = await planted();
    await sidecarExec(rig.manager.sidecarEndpoint(victim.id), 'echo victim > /home/agent/proj/v.txt');
    expect((await toCold(victim.id)).errors).toEqual([]);
    const cold = rig.manager.get(victim.id);
    const wsName = cold.snapshotRemote!.workspace!;
    const imgName = cold.snapshotRemote!.image!;
    const original = await getObject(wsName);

    // Swapped: the source's workspace object (another sandbox's, valid) over the victim's name.
    await putObject(wsName, await getObject(afterSnap.snapshotRemote!.workspace!));
    await expect(rig.manager.resume(victim.id)).rejects.toMatchObject({
      code: 'SNAPSHOT_CORRUPT',
      message: expect.stringMatching(/failed authentication/),
    });
    expect(rig.manager.get(victim.id)).toMatchObject({ state: 'stopped', tier: 'cold' });
    // Swapped within the sandbox: its image object under its workspace name.
    await putObject(wsName, await getObject(imgName));
    await expect(rig.manager.resume(victim.id)).rejects.toMatchObject({ code: 'SNAPSHOT_CORRUPT' });
    // Tampered: one flipped byte.
    const flipped = Buffer.from(original);
    flipped[Math.floor(flipped.length / 2)]! ^= 1;
    await putObject(wsName, flipped);
    await expect(rig.manager.resume(victim.id)).rejects.toMatchObject({ code: 'SNAPSHOT_CORRUPT' });
    expect(rig.manager.get(victim.id)).toMatchObject({ state: 'stopped', tier: 'cold' });
    expect(await localArchives(cold.snapshotArchiveDir)).not.toContain('workspace.tar');
    // The genuine object back: the resume works and the files are the victim's own.
    await putObject(wsName, original);
    await rig.manager.resume(victim.id);
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(victim.id), 'cat /home/agent/proj/v.txt')).stdout,
    ).toBe('victim\n');

    // Restore from the snapshot in the bucket: the source's container and volume lost.
    const live = rig.manager.get(src.id);
    await rig.manager.driver.removeContainer(live.containerId!);
    await rig.manager.driver.removeVolume(live.volumeName);
    const lost = await rig.manager.stop(src.id);
    expect(lost).toMatchObject({ state: 'stopped', tier: 'warm' });
    await rig.manager.resume(src.id);
    expect(
      (await sidecarExec(rig.manager.sidecarEndpoint(src.id), 'cat /home/agent/proj/a.txt')).stdout,
    ).toBe(`${PLANTED}\n`);

    // Delete removes its objects: a new snapshot, then delete, and the bucket is empty.
    await rig.manager.snapshot(src.id);
    expect((await storedObjects()).size).toBe(1);
    await rig.manager.delete(src.id);
    await rig.manager.delete(fork.id);
    await rig.manager.delete(victim.id);
    expect((await storedObjects()).size).toBe(0);
  });
});

describe('destination allow-list at start-up', () => {
  it('refuses link-local/metadata, private addresses and plain http unless configured, with a clear error', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [
        { endpoint: 'http://169.254.169.254', allowHttp: true, allowPrivateHosts: ['169.254.169.254'] },
        /never receives snapshots/,
      ],
      [
        { endpoint: 'https://10.20.30.40:9000' },
        /private, loopback or CGNAT.*SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS/,
      ],
      [{ endpoint: s3.endpoint, allowPrivateHosts: ['127.0.0.1'] }, /plain http.*SNAPSHOT_S3_ALLOW_HTTP/],
      [{ endpoint: s3.endpoint, allowHttp: true }, /private, loopback/],
    ];
    for (const [over, why] of cases) {
      const err = await makeRig(image, {
        snapshotS3: { bucket: s3.bucket, ...S3_CREDENTIALS, ...over },
      }).then(
        () => undefined,
        (e: unknown) => e as Error & { code: string },
      );
      expect(err, JSON.stringify(over)).toMatchObject({ code: 'CONFIG_INVALID' });
      expect(err?.message).toMatch(why);
      expect(err?.message).toMatch(/SNAPSHOT_S3_ENDPOINT/);
    }
  });
});
