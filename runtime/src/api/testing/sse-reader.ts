// Test helper: reads an SSE response into events, optionally stopping (disconnecting) after n.
export interface ReadEvent {
  id?: string;
  event?: string;
  data: string;
}

export async function readSse(
  url: string,
  opts: { token: string; lastEventId?: string; stopAfter?: number; timeoutMs?: number },
): Promise<{ status: number; events: ReadEvent[]; contentType: string | null }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 10_000);
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token}` };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: ReadEvent[] = [];
  if (!res.ok || !res.body) {
    clearTimeout(timer);
    await res.text();
    return { status: res.status, events, contentType: res.headers.get('content-type') };
  }
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let i = buf.indexOf('\n\n');
      while (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const ev: ReadEvent = { data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const [k, ...rest] = line.split(':');
          const v = rest.join(':').replace(/^ /, '');
          if (k === 'id') ev.id = v;
          else if (k === 'event') ev.event = v;
          else if (k === 'data') data.push(v);
        }
        if (data.length > 0) {
          ev.data = data.join('\n');
          events.push(ev);
          if (opts.stopAfter !== undefined && events.length >= opts.stopAfter) {
            abort.abort();
            return { status: res.status, events, contentType: res.headers.get('content-type') };
          }
        }
        i = buf.indexOf('\n\n');
      }
    }
  } catch (e) {
    if (!abort.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
  }
  return { status: res.status, events, contentType: res.headers.get('content-type') };
}
