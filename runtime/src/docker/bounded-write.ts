// Streams written to disk with a byte limit: past it the pipeline fails with SizeLimitExceeded and
// the partial file is removed, so a capped archive never leaves half a file behind.
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A stream written to disk passed its byte limit; the partial file has been removed. */
export class SizeLimitExceeded extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} bytes`);
  }
}

/** Passes bytes through until `max`, then fails the pipeline with SizeLimitExceeded. */
function byteLimit(max: number): Transform {
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > max) cb(new SizeLimitExceeded(max));
      else cb(null, chunk);
    },
  });
}

/** Streams to `file` (mode 0600), at most `max` bytes; on any failure the file is removed. */
export async function writeBounded(
  input: NodeJS.ReadableStream,
  file: string,
  max?: number,
): Promise<number> {
  let n = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      cb(null, chunk);
    },
  });
  try {
    if (max === undefined) await pipeline(input, count, createWriteStream(file, { mode: 0o600 }));
    else await pipeline(input, byteLimit(max), count, createWriteStream(file, { mode: 0o600 }));
    return n;
  } catch (e) {
    await rm(file, { force: true });
    throw e;
  }
}
