// Server-sent events parser for sidecar streams (agent runs, terminals), bounded per event.

export interface SseEvent {
  /** `event:` field; undefined for unnamed (default "message") events. */
  event?: string;
  data: string;
  id?: string;
}

/**
 * Yields events from an SSE byte stream. Comments (keep-alives) are skipped. An event larger than
 * `maxEventBytes` throws, so a misbehaving sidecar cannot grow operator memory without bound.
 */
export async function* parseSse(
  body: AsyncIterable<Uint8Array>,
  maxEventBytes: number,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buf = '';
  let event: string | undefined;
  let id: string | undefined;
  let data: string[] = [];
  let size = 0;

  const flush = (): SseEvent | undefined => {
    const out =
      data.length === 0
        ? undefined
        : {
            data: data.join('\n'),
            ...(event !== undefined ? { event } : {}),
            ...(id !== undefined ? { id } : {}),
          };
    event = undefined;
    id = undefined;
    data = [];
    size = 0;
    return out;
  };

  const line = (l: string): SseEvent | undefined => {
    if (l === '') return flush();
    if (l.startsWith(':')) return undefined;
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    size += value.length;
    if (size > maxEventBytes) throw new Error(`sidecar event exceeds ${maxEventBytes} bytes`);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    return undefined;
  };

  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl = buf.search(/\r\n|\r|\n/);
    while (nl !== -1) {
      // A CR at the very end may be half of a CRLF split across chunks: wait for the next one.
      if (nl === buf.length - 1 && buf[nl] === '\r') break;
      const sepLen = buf.startsWith('\r\n', nl) ? 2 : 1;
      const ev = line(buf.slice(0, nl));
      buf = buf.slice(nl + sepLen);
      if (ev) yield ev;
      nl = buf.search(/\r\n|\r|\n/);
    }
    if (buf.length > maxEventBytes) throw new Error(`sidecar event exceeds ${maxEventBytes} bytes`);
  }
  buf += decoder.decode();
  if (buf !== '') line(buf);
  // A stream that ends without the blank line still delivers its last complete event.
  const last = flush();
  if (last) yield last;
}
