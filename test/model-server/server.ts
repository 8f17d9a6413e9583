// Test-only scripted model server: one HTTP server speaking the wire formats the four harnesses call
// (OpenAI Responses + Chat Completions, Anthropic Messages, Gemini), replaying "first a tool call that
// runs <command>, then, given its output, a final message". It records every request and what it charged.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Asked,
  type Charge,
  chatAsked,
  chatStream,
  geminiAsked,
  geminiResponse,
  geminiStream,
  messagesAsked,
  messagesJson,
  messagesStream,
  type Reply,
  responsesAsked,
  responsesStream,
} from './wire.ts';

export interface Script {
  /** The shell command the first answer asks the harness to run. */
  command: string;
  /** The final message, once the request carries the tool's output. */
  finalText: string;
}

export interface Recorded {
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: whatever the harness sent
  body: any;
  /** The raw request text (for "does the transcript contain X" checks). */
  raw: string;
  headers: IncomingMessage['headers'];
  reply: Reply['kind'] | 'none';
  /** A harness turn (the request declared tools), not a side call such as a title or a classifier. */
  turn: boolean;
  charge: Charge;
}

/** What each answer costs: a harness turn's tool call, its final message, and side calls (titles, classifiers). */
export const CHARGES = {
  tool: { input: 1000, output: 40, cached: 300 },
  text: { input: 1500, output: 25, cached: 500 },
  aux: { input: 20, output: 5, cached: 0 },
} as const satisfies Record<string, Charge>;

const NONE: Charge = { input: 0, output: 0, cached: 0 };

export class ModelServer {
  readonly requests: Recorded[] = [];
  script: Script = { command: 'true', finalText: 'done' };
  model = 'scripted-model';
  /** Called after each request is answered (dev logging). */
  onRequest?: (r: Recorded) => void;
  #server: Server;
  #calls = 0;
  url = '';

  private constructor() {
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      });
    });
  }

  /** Listens on `host` (the Docker bridge gateway, so containers reach it) at a free port. */
  static async start(host = '127.0.0.1', port = 0): Promise<ModelServer> {
    const s = new ModelServer();
    s.#server.listen(port, host);
    await once(s.#server, 'listening');
    s.url = `http://${host}:${(s.#server.address() as AddressInfo).port}`;
    return s;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  /**
   * The tokens charged for the harness turns recorded from index `from` on (what a harness reports
   * as its usage; side calls such as opencode's title are charged too but counted apart).
   */
  charged(from = 0, opts: { sideCalls?: boolean } = {}): Charge {
    const t = { input: 0, output: 0, cached: 0 };
    for (const r of this.requests.slice(from)) {
      if (r.turn === !!opts.sideCalls) continue;
      t.input += r.charge.input;
      t.output += r.charge.output;
      t.cached += r.charge.cached;
    }
    return t;
  }

  #decide(a: Asked): { reply: Reply; charge: Charge } {
    if (a.wantsJson) {
      // gemini-cli's routing / next-speaker classifiers: any valid JSON answer ends them.
      const text = JSON.stringify({ reasoning: 'scripted', next_speaker: 'user', model_choice: 'flash' });
      return { reply: { kind: 'json', text }, charge: CHARGES.aux };
    }
    if (!a.hasTools) return { reply: { kind: 'text', text: 'Scripted title' }, charge: CHARGES.aux };
    if (a.hasToolResult)
      return { reply: { kind: 'text', text: this.script.finalText }, charge: CHARGES.text };
    this.#calls++;
    const callId = `call_${this.#calls}_${Math.random().toString(36).slice(2, 8)}`;
    return { reply: { kind: 'tool', command: this.script.command, callId }, charge: CHARGES.tool };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {}
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const rec: Recorded = { path, body, raw, headers: req.headers, reply: 'none', turn: false, charge: NONE };
    this.requests.push(rec);
    const json = (status: number, v: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    res.on('finish', () => this.onRequest?.(rec));
    const stream = (text: string) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(text);
    };
    const answer = (a: Asked) => {
      const d = this.#decide(a);
      rec.reply = d.reply.kind;
      rec.turn = a.hasTools && !a.wantsJson;
      rec.charge = d.charge;
      return d;
    };
    // biome-ignore lint/suspicious/noExplicitAny: request bodies vary by format
    const b = body as any;
    if (req.method === 'GET' && /\/models$/.test(path)) {
      return json(200, { object: 'list', data: [{ id: this.model, object: 'model' }], models: [] });
    }
    if (/\/responses$/.test(path)) {
      const d = answer(responsesAsked(b));
      return stream(responsesStream(b, d.reply, d.charge, this.model));
    }
    if (/\/chat\/completions$/.test(path)) {
      const d = answer(chatAsked(b));
      return stream(chatStream(b, d.reply, d.charge, this.model));
    }
    if (/\/messages\/count_tokens$/.test(path)) return json(200, { input_tokens: 10 });
    if (/\/messages$/.test(path)) {
      const d = answer(messagesAsked(b));
      if (b.stream) return stream(messagesStream(b, d.reply, d.charge, this.model));
      return json(200, messagesJson(b, d.reply, d.charge, this.model));
    }
    if (/:countTokens$/.test(path)) return json(200, { totalTokens: 10 });
    if (/:streamGenerateContent$/.test(path)) {
      const d = answer(geminiAsked(b));
      return stream(geminiStream(b, d.reply, d.charge, this.model));
    }
    if (/:generateContent$/.test(path)) {
      const d = answer(geminiAsked(b));
      return json(200, geminiResponse(b, d.reply, d.charge, this.model));
    }
    json(404, { error: { message: `the scripted model server does not serve ${req.method} ${path}` } });
  }
}
