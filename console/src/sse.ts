// Server-sent events framing (the WHATWG event-stream format's id/event/data fields), shared by
// the plain API stream (api.ts) and the decrypted TEE channel stream (tee-ops.ts).

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** Feed decoded text as it arrives; each call returns the events its text completed. */
export class SseParser {
  #buf = '';

  push(text: string): SseEvent[] {
    this.#buf += text.replace(/\r\n/g, '\n');
    const out: SseEvent[] = [];
    for (let i = this.#buf.indexOf('\n\n'); i >= 0; i = this.#buf.indexOf('\n\n')) {
      const ev = parseBlock(this.#buf.slice(0, i));
      this.#buf = this.#buf.slice(i + 2);
      if (ev) out.push(ev);
    }
    return out;
  }
}

function parseBlock(block: string): SseEvent | undefined {
  const ev: SseEvent = { event: 'message', data: '' };
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const k = at < 0 ? line : line.slice(0, at);
    const v = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (k === 'id') ev.id = v;
    else if (k === 'event') ev.event = v;
    else if (k === 'data') data.push(v);
  }
  if (data.length === 0 && !ev.id) return undefined;
  ev.data = data.join('\n');
  return ev;
}
