// Client-side sealing of snapshot objects: a stream of AES-256-GCM chunks (Node's OpenSSL), so a
// snapshot of any size is sealed and opened in constant memory, and every byte is authenticated
// before it is used.
//
//   object = MAGIC(8) ‖ salt(32) ‖ chunk₀ ‖ chunk₁ ‖ … ‖ chunkₙ        chunk = GCM(pt ≤ 1 MiB) ‖ tag(16)
//   key    = HKDF-SHA256(objectKey, salt, info = binding)   (a fresh key per object: no nonce reuse)
//   nonce  = counter (11 bytes, big-endian) ‖ last (1 byte: 1 on the final chunk only)
//
// The binding (the object's name and what it holds: sandbox id, kind) goes into the key, so an
// object copied over another's name, or another sandbox's, opens under a different key and fails;
// the counter refuses reordered or dropped chunks, the last flag a truncated object. Every chunk
// but the last is full, so the reader knows the last one by the stream's end.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

const MAGIC = Buffer.from('ASBXSO01', 'latin1');
const SALT_LEN = 32;
const TAG_LEN = 16;
export const CHUNK = 1024 * 1024;
const HEADER = MAGIC.length + SALT_LEN;

/** An object failed authentication (modified, swapped, truncated, or sealed under another key). */
export class SealedObjectError extends Error {
  override readonly name = 'SealedObjectError';
}

function objectKey(key: Uint8Array, salt: Uint8Array, binding: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, salt, Buffer.from(binding, 'utf8'), 32));
}

function nonce(counter: number, last: boolean): Buffer {
  const n = Buffer.alloc(12);
  n.writeUIntBE(counter, 5, 6);
  n[11] = last ? 1 : 0;
  return n;
}

/** Bytes a sealed object of `plain` bytes takes. */
export function sealedSize(plain: number): number {
  return HEADER + plain + Math.max(1, Math.ceil(plain / CHUNK)) * TAG_LEN;
}

/** A stream that seals what is written to it under `key`, bound to `binding`. */
export function sealStream(key: Uint8Array, binding: string): Transform {
  const salt = randomBytes(SALT_LEN);
  const k = objectKey(key, salt, binding);
  let counter = 0;
  let buf: Buffer = Buffer.alloc(0);
  const chunk = (pt: Buffer, last: boolean): Buffer => {
    const c = createCipheriv('aes-256-gcm', k, nonce(counter++, last));
    const body = Buffer.concat([c.update(pt), c.final()]);
    return Buffer.concat([body, c.getAuthTag()]);
  };
  let started = false;
  return new Transform({
    transform(data: Buffer, _enc, cb: TransformCallback) {
      if (!started) {
        started = true;
        this.push(Buffer.concat([MAGIC, salt]));
      }
      buf = buf.length ? Buffer.concat([buf, data]) : data;
      // Strictly more than a chunk: what is left at the end (0..CHUNK bytes) is the last chunk.
      while (buf.length > CHUNK) {
        this.push(chunk(buf.subarray(0, CHUNK), false));
        buf = buf.subarray(CHUNK);
      }
      cb();
    },
    flush(cb: TransformCallback) {
      if (!started) this.push(Buffer.concat([MAGIC, salt]));
      this.push(chunk(buf, true));
      cb();
    },
  });
}

/**
 * A stream that opens a sealed object; it errors with SealedObjectError on the first chunk that
 * fails (nothing of that chunk is passed on). A consumer must treat its output as unverified until
 * the stream ends without error (the end proves the object whole): write to a temp file, rename after.
 */
export function openStream(key: Uint8Array, binding: string): Transform {
  let k: Buffer | undefined;
  let counter = 0;
  let buf: Buffer = Buffer.alloc(0);
  const open = (ct: Buffer, last: boolean): Buffer => {
    const d = createDecipheriv('aes-256-gcm', k!, nonce(counter++, last));
    d.setAuthTag(ct.subarray(ct.length - TAG_LEN));
    try {
      return Buffer.concat([d.update(ct.subarray(0, ct.length - TAG_LEN)), d.final()]);
    } catch {
      throw new SealedObjectError(
        'the snapshot object failed authentication: it was modified, swapped for another, truncated, or sealed under another key',
      );
    }
  };
  return new Transform({
    transform(data: Buffer, _enc, cb: TransformCallback) {
      buf = buf.length ? Buffer.concat([buf, data]) : data;
      try {
        if (!k) {
          if (buf.length < HEADER) return cb();
          if (!buf.subarray(0, MAGIC.length).equals(MAGIC)) {
            throw new SealedObjectError('the snapshot object is not a sealed snapshot object (bad header)');
          }
          k = objectKey(key, buf.subarray(MAGIC.length, HEADER), binding);
          buf = buf.subarray(HEADER);
        }
        while (buf.length > CHUNK + TAG_LEN) {
          this.push(open(buf.subarray(0, CHUNK + TAG_LEN), false));
          buf = buf.subarray(CHUNK + TAG_LEN);
        }
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    flush(cb: TransformCallback) {
      try {
        if (!k || buf.length < TAG_LEN) throw new SealedObjectError('the snapshot object is truncated');
        this.push(open(buf, true));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
  });
}
