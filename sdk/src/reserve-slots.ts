// Room kept for a small file on a full disk. Beside the file sit two slot files whose blocks are
// written (zeros) ahead of time; when the file itself cannot be written for lack of space, its
// content goes in place into the older slot — an overwrite of blocks the file already holds needs
// no free space (true on ext4, xfs and tmpfs; not on copy-on-write filesystems such as btrfs or ZFS).
// Each slot starts with a header line: `asb-reserve 1 <seq> <length> <sha256 of the content>`, so a
// reader takes the valid slot with the highest sequence number and a write torn by a crash is
// never mistaken for content; the other slot still holds the write before it.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, open, readFile, stat } from 'node:fs/promises';

const { O_RDWR, O_CREAT, O_NOFOLLOW } = constants;
const MAGIC = 'asb-reserve 1';
/** Smallest slot: far above a quiet cursor's few kilobytes. */
export const MIN_SLOT_BYTES = 64 * 1024;

export interface SlotContent {
  seq: number;
  content: string;
}

/** True for the write errors that mean "no room" (the reserve is for these). */
export function noSpace(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export class ReserveSlots {
  readonly paths: readonly [string, string];
  /** Bytes each slot holds (0 until `ensure` made them). */
  #size = 0;
  /** The slot the next write goes to (never the one holding the newest valid content). */
  #next = 0;

  constructor(path: string) {
    this.paths = [`${path}.reserve-0`, `${path}.reserve-1`];
  }

  get size(): number {
    return this.#size;
  }

  /** The newest valid content of either slot, if any; notes which slot to write next. */
  async read(): Promise<SlotContent | undefined> {
    let best: SlotContent | undefined;
    const sizes: number[] = [];
    for (const [i, p] of this.paths.entries()) {
      const buf = await readFile(p).catch(() => undefined);
      sizes.push(buf?.length ?? 0);
      const c = buf ? parse(buf) : undefined;
      if (c && (!best || c.seq > best.seq)) {
        best = c;
        this.#next = 1 - i;
      }
    }
    this.#size = Math.min(...sizes);
    return best;
  }

  /**
   * Makes both slots at least big enough for `contentBytes` (with room to grow: 4×, at least
   * MIN_SLOT_BYTES), writing their blocks. Best effort: a disk with no room keeps what it has.
   */
  async ensure(contentBytes: number): Promise<void> {
    if (this.#size >= MIN_SLOT_BYTES && this.#size >= 2 * (contentBytes + 200)) return;
    let want = MIN_SLOT_BYTES;
    while (want < 4 * (contentBytes + 200)) want *= 2;
    const sizes: number[] = [];
    for (const p of this.paths) {
      const fh = await openSlot(p).catch(() => undefined);
      if (!fh) return;
      try {
        const have = (await fh.stat()).size;
        if (have < want) {
          // Zeros written out, not a sparse extension: the blocks must really be the file's.
          await fh.write(Buffer.alloc(want - have), 0, want - have, have);
          await fh.sync();
        }
        sizes.push(want);
      } catch {
        sizes.push((await stat(p).catch(() => ({ size: 0 }))).size);
      } finally {
        await fh.close();
      }
    }
    this.#size = Math.min(...sizes);
  }

  /** Writes `content` in place into the older slot (durable once resolved); never grows a slot. */
  async write(seq: number, content: string): Promise<void> {
    const body = Buffer.from(content, 'utf8');
    const head = Buffer.from(`${MAGIC} ${seq} ${body.length} ${sha256(body)}\n`, 'utf8');
    if (head.length + body.length > this.#size) {
      throw Object.assign(
        new Error(`the reserve (${this.#size} bytes a slot) cannot hold ${body.length} bytes`),
        {
          code: 'ENOSPC',
        },
      );
    }
    const i = this.#next;
    try {
      const fh = await openSlot(this.paths[i === 0 ? 0 : 1]);
      try {
        if ((await fh.stat()).size < this.#size)
          throw Object.assign(new Error('reserve slot shrank'), { code: 'ENOSPC' });
        await fh.write(Buffer.concat([head, body]), 0, head.length + body.length, 0);
        await fh.datasync();
      } finally {
        await fh.close();
      }
    } catch (e) {
      this.#size = 0; // made again by the next `ensure` once there is room
      throw e;
    }
    this.#next = 1 - i;
  }
}

function openSlot(path: string): Promise<FileHandle> {
  return open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o600);
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

function parse(buf: Buffer): SlotContent | undefined {
  const nl = buf.indexOf(0x0a);
  if (nl < 0 || nl > 200) return undefined;
  const m = /^asb-reserve 1 (\d+) (\d+) ([0-9a-f]{64})$/.exec(buf.subarray(0, nl).toString('utf8'));
  if (!m) return undefined;
  const body = buf.subarray(nl + 1, nl + 1 + Number(m[2]));
  if (body.length !== Number(m[2]) || sha256(body) !== m[3]) return undefined;
  return { seq: Number(m[1]), content: body.toString('utf8') };
}
