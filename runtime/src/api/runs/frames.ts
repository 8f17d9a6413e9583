// Every streamed run frame is bounded to MAX_FRAME_BYTES of UTF-8, counting the whole SSE frame
// (id and event lines, keys, JSON escaping). A text delta (`message.part.updated` with
// `delta: true`) that is too big is SPLIT into several frames of the same part: nothing is lost,
// since clients append deltas. Any other frame that is too big is TRUNCATED: its longest strings
// are cut until it fits and it gains `truncated: {fields, original_bytes, max_frame_bytes}`.

export const MAX_FRAME_BYTES = 1024 * 1024;
/** Room kept for the frame's `id:` and `event:` lines and SSE framing. */
const HEADER_ROOM = 1024;

export interface Frame {
  event: string;
  data: unknown;
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? 'null');
/** Bytes a string adds inside JSON (escaping included, quotes excluded). */
const escapedBytes = (s: string) => jsonBytes(s) - 2;

/** UTF-8 bytes of code unit `c` inside a JSON string (JSON.stringify's escaping). */
function unitBytes(c: number): number {
  if (c === 0x22 || c === 0x5c) return 2; // \" \\
  if (c < 0x20) return c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  return 3;
}

/**
 * The longest prefix of `s` (whole code points) whose JSON-escaped size is at most `budget`.
 * One pass over char codes: a valid surrogate pair is 4 bytes, a lone surrogate is escaped
 * (\uXXXX, 6 bytes), as JSON.stringify does.
 */
function escapedPrefix(s: string, budget: number): string {
  let used = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    let n: number;
    let w = 1;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        n = 4;
        w = 2;
      } else n = 6;
    } else if (c >= 0xdc00 && c <= 0xdfff) n = 6;
    else n = unitBytes(c);
    if (used + n > budget) break;
    used += n;
    i += w;
  }
  return s.slice(0, i);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

function splitDelta(event: string, data: Obj, budget: number): Frame[] | undefined {
  const part = data.part;
  if (data.delta !== true || !isObj(part) || typeof part.text !== 'string') return undefined;
  const both = part.content === part.text;
  const text = part.text;
  const empty = { ...data, part: { ...part, text: '', ...(both ? { content: '' } : {}) } };
  const room = Math.floor((budget - jsonBytes(empty)) / (both ? 2 : 1));
  if (room < 1024) return undefined;
  const frames: Frame[] = [];
  let rest = text;
  while (rest.length > 0) {
    const chunk = escapedPrefix(rest, room);
    rest = rest.slice(chunk.length);
    const last = rest.length === 0;
    frames.push({
      event,
      data: {
        ...data,
        part: {
          ...part,
          text: chunk,
          ...(both ? { content: chunk } : {}),
          // Only the last piece keeps the part's state; the others are still running.
          ...(!last && part.state !== undefined ? { state: 'running' } : {}),
        },
      },
    });
  }
  return frames;
}

/** String leaves (paths up to four deep), longest first. */
function stringLeaves(v: unknown, path: string[] = [], out: Array<{ path: string[]; bytes: number }> = []) {
  if (typeof v === 'string') out.push({ path, bytes: escapedBytes(v) });
  else if (isObj(v) && path.length < 4)
    for (const [k, c] of Object.entries(v)) stringLeaves(c, [...path, k], out);
  return out.sort((a, b) => b.bytes - a.bytes);
}

function setPath(root: Obj, path: string[], value: string): Obj {
  const [head, ...rest] = path as [string, ...string[]];
  return { ...root, [head]: rest.length === 0 ? value : setPath(root[head] as Obj, rest, value) };
}

function getPath(root: Obj, path: string[]): unknown {
  return path.reduce<unknown>((v, k) => (isObj(v) ? v[k] : undefined), root);
}

function truncate(event: string, data: Obj, budget: number, original: number): Frame {
  const fields: string[] = [];
  let out: Obj = data;
  const marker = () => ({ fields: [...fields], original_bytes: original, max_frame_bytes: MAX_FRAME_BYTES });
  for (const leaf of stringLeaves(data)) {
    // Reserve room for the marker as it will be once this field is named in it.
    const excess =
      jsonBytes({ ...out, truncated: { ...marker(), fields: [...fields, leaf.path.join('.')] } }) - budget;
    if (excess <= 0) break;
    fields.push(leaf.path.join('.'));
    const s = getPath(out, leaf.path) as string;
    // A little under: the marker's numbers and names must still fit after the cut.
    out = setPath(out, leaf.path, escapedPrefix(s, Math.max(0, leaf.bytes - excess - 256)));
  }
  return { event, data: { ...out, truncated: marker() } };
}

/** The frames to store for one event: itself, or its pieces, each within the bound. */
export function boundFrames(event: string, data: unknown, idBytes = 64): Frame[] {
  const budget = MAX_FRAME_BYTES - HEADER_ROOM - idBytes - Buffer.byteLength(event);
  const size = jsonBytes(data);
  if (size <= budget) return [{ event, data }];
  const obj = isObj(data) ? data : { value: data };
  const split = splitDelta(event, obj, budget);
  if (split) return split;
  const cut = truncate(event, obj, budget, size);
  if (jsonBytes(cut.data) <= budget) return [cut];
  // Too big in a shape strings cannot shrink (e.g. a huge array): only the marker is kept.
  return [
    { event, data: { truncated: { fields: ['*'], original_bytes: size, max_frame_bytes: MAX_FRAME_BYTES } } },
  ];
}
