// Snapshot objects in an S3-compatible bucket, sealed before they leave (sealed-stream.ts) under a
// key derived from the store's secret, which never leaves the operator. Uploads stream (multipart,
// constant memory) from a local file; downloads stream into a temp file that is renamed only once
// the whole object authenticated. Object names are the prefix and a random id: nothing of the
// tenant, the sandbox or what the object holds; the record (encrypted store) maps a sandbox to them.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Logger } from 'pino';
import { RuntimeError } from '../errors.ts';
import { checkSnapshotS3Config, type SnapshotS3Config } from './config.ts';
import { checkDestination, type DestinationPolicy, guardedLookup } from './destination.ts';
import { openStream, SealedObjectError, sealedSize, sealStream } from './sealed-stream.ts';

/** What an object is bound to: a sealed object opens only under the same binding. */
export interface ObjectBinding {
  sandboxId: string;
  /** What it holds (workspace, image). */
  kind: string;
}

const bindingText = (name: string, b: ObjectBinding) =>
  `agent-sandbox snapshot object v1\u0000${b.sandboxId}\u0000${b.kind}\u0000${name}`;

function why(e: unknown): string {
  const err = e as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = err.$metadata?.httpStatusCode;
  return [err.code ?? err.name, status ? `HTTP ${status}` : '', err.message].filter(Boolean).join(': ');
}

export class S3SnapshotStore {
  readonly #client: S3Client;
  readonly #cfg: SnapshotS3Config;
  readonly #key: Uint8Array;

  private constructor(cfg: SnapshotS3Config, key: Uint8Array, policy: DestinationPolicy) {
    this.#cfg = cfg;
    this.#key = key;
    const lookup = guardedLookup(policy);
    this.#client = new S3Client({
      region: cfg.region,
      ...(cfg.endpoint ? { endpoint: cfg.endpoint } : {}),
      forcePathStyle: cfg.forcePathStyle,
      ...(cfg.accessKeyId && cfg.secretAccessKey
        ? { credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey } }
        : {}),
      // Content is sealed and authenticated by us; the SDK's extra checksums are not needed.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      requestHandler: {
        httpAgent: new http.Agent({ keepAlive: true, lookup } as http.AgentOptions),
        httpsAgent: new https.Agent({ keepAlive: true, lookup } as https.AgentOptions),
        connectionTimeout: 10_000,
        requestTimeout: cfg.requestTimeoutMs,
      },
    });
  }

  /**
   * Checks the destination against the allow-list (CONFIG_INVALID, before any request) and that
   * the bucket answers; an unreachable store is only logged (snapshots stay local until it is back).
   */
  static async open(cfg: SnapshotS3Config, key: Uint8Array, log: Logger): Promise<S3SnapshotStore> {
    checkSnapshotS3Config(cfg);
    const policy: DestinationPolicy = {
      allowHttp: cfg.allowHttp,
      allowPrivateHosts: cfg.allowPrivateHosts.map((h) => h.toLowerCase()),
    };
    await checkDestination(cfg.endpoint || `https://s3.${cfg.region}.amazonaws.com`, policy);
    const store = new S3SnapshotStore(cfg, key, policy);
    // A read of a name that never exists: NoSuchKey proves the bucket and the credentials (a
    // bucket-level call would do too, but an object-level one needs only object permissions).
    try {
      await store.#client.send(new GetObjectCommand({ Bucket: cfg.bucket, Key: `${cfg.prefix}.probe` }));
    } catch (e) {
      const name = (e as { name?: string; Code?: string }).name;
      const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (name === 'NoSuchKey') return store;
      if (name === 'NoSuchBucket' || status === 403 || status === 301) {
        store.close();
        throw new RuntimeError(
          'CONFIG_INVALID',
          `SNAPSHOT_S3_BUCKET ${cfg.bucket}: ${name === 'NoSuchBucket' ? 'no such bucket' : status === 403 ? 'access denied with the configured credentials' : 'the bucket is in another region (set SNAPSHOT_S3_REGION)'}; create the bucket or fix SNAPSHOT_S3_*`,
        );
      }
      log.warn(
        { err: why(e), bucket: cfg.bucket },
        'snapshot object store does not answer; cold snapshots stay local until it does',
      );
    }
    return store;
  }

  get bucket(): string {
    return this.#cfg.bucket;
  }

  /** A fresh opaque object name (prefix + 128 random bits). */
  newName(): string {
    return `${this.#cfg.prefix}${randomBytes(16).toString('hex')}`;
  }

  /** Seals `file` and uploads it as `name` (multipart, streamed); returns the object's size. */
  async put(name: string, binding: ObjectBinding, file: string): Promise<number> {
    const plain = (await stat(file)).size;
    const src = createReadStream(file);
    const sealed = sealStream(this.#key, bindingText(name, binding));
    src.on('error', (e) => sealed.destroy(e));
    src.pipe(sealed);
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#cfg.bucket, Key: name, Body: sealed, ContentType: 'application/octet-stream' },
      partSize: this.#cfg.partSizeBytes,
      queueSize: 2,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (e) {
      src.destroy();
      await upload.abort().catch(() => {});
      throw new RuntimeError(
        'SNAPSHOT_STORE_UNAVAILABLE',
        `uploading a snapshot to bucket ${this.#cfg.bucket} failed (${why(e)}); the local copy is kept and nothing was lost; it is retried on the next attempt`,
        { cause: e },
      );
    }
    return sealedSize(plain);
  }

  /**
   * Downloads `name`, opens it and writes the plaintext to `dest` (through `dest`.tmp, renamed
   * only when the whole object authenticated). SNAPSHOT_CORRUPT when it fails authentication or
   * is missing; SNAPSHOT_STORE_UNAVAILABLE when the store does not answer. Nothing is left on failure.
   */
  async get(name: string, binding: ObjectBinding, dest: string): Promise<void> {
    const tmp = `${dest}.tmp`;
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: this.#cfg.bucket, Key: name }));
      await pipeline(
        out.Body as Readable,
        openStream(this.#key, bindingText(name, binding)),
        createWriteStream(tmp, { mode: 0o600 }),
      );
      await rename(tmp, dest);
    } catch (e) {
      await rm(tmp, { force: true });
      const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (e instanceof SealedObjectError || status === 404) {
        throw new RuntimeError(
          'SNAPSHOT_CORRUPT',
          `the ${binding.kind} snapshot of sandbox ${binding.sandboxId} in bucket ${this.#cfg.bucket} ${status === 404 ? 'is missing' : 'failed authentication (modified, swapped or truncated in the bucket)'}; it was not used and the sandbox was left as it was`,
          { cause: e },
        );
      }
      throw new RuntimeError(
        'SNAPSHOT_STORE_UNAVAILABLE',
        `downloading a snapshot from bucket ${this.#cfg.bucket} failed (${why(e)}); nothing was changed, try again once the store answers`,
        { cause: e },
      );
    }
  }

  /** Deletes the objects (a missing one is fine); SNAPSHOT_STORE_UNAVAILABLE when the store fails. */
  async remove(names: readonly string[]): Promise<void> {
    for (const name of names) {
      try {
        await this.#client.send(new DeleteObjectCommand({ Bucket: this.#cfg.bucket, Key: name }));
      } catch (e) {
        throw new RuntimeError(
          'SNAPSHOT_STORE_UNAVAILABLE',
          `deleting a snapshot object from bucket ${this.#cfg.bucket} failed (${why(e)}); try again once the store answers`,
          { cause: e },
        );
      }
    }
  }

  close(): void {
    this.#client.destroy();
  }
}
