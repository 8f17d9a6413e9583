// Keeps the user's credentials out of run events: the value of every secret-named env variable
// (…KEY, …TOKEN, …SECRET, …PASSWORD, …CREDENTIALS) is replaced wherever a harness echoes it, also
// when a streamed answer splits it across two deltas (StreamRedactor holds back a short tail).
import type { AgentPart } from './run-stream.ts';

const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
/** Shorter values would redact ordinary words. */
const MIN_SECRET_CHARS = 8;

export type Redact = (text: string) => string;

/** [name, value] of each secret in `env`, longest value first. */
function secretsOf(env: Record<string, string | undefined>): Array<readonly [string, string]> {
  return (
    Object.entries(env)
      .filter(([k, v]) => SECRET_NAME.test(k) && v && v.length >= MIN_SECRET_CHARS)
      .map(([k, v]) => [k, v!] as const)
      // Longest first, so a secret containing another is replaced whole.
      .sort((a, b) => b[1].length - a[1].length)
  );
}

export function secretRedactor(env: Record<string, string | undefined>): Redact {
  const secrets = secretsOf(env);
  if (!secrets.length) return (t) => t;
  return (text) => {
    let out = text;
    for (const [k, v] of secrets) if (out.includes(v)) out = out.split(v).join(`[redacted:${k}]`);
    return out;
  };
}

/** The part with every text it carries redacted (the tool's input through its JSON). */
export function redactPart(p: AgentPart, redact: Redact): AgentPart {
  const out: AgentPart = { ...p, text: redact(p.text), content: redact(p.content) };
  if (p.tool) {
    const json = JSON.stringify(p.tool.input ?? null);
    const clean = redact(json);
    out.tool = {
      ...p.tool,
      input: clean === json ? p.tool.input : JSON.parse(clean),
      ...(p.tool.output !== undefined ? { output: redact(p.tool.output) } : {}),
    };
  }
  return out;
}

/**
 * Redacts a run's parts as they stream. Text and reasoning deltas of one part are joined before
 * redacting: a part's tail that could be the start of a secret is held back until more text comes,
 * so a secret split across deltas is still whole when it is replaced (a cut never falls inside a
 * whole secret). Held text goes out before the next tool part, with the part's
 * `completed` update, and on `flush()` (the run's end).
 */
export class StreamRedactor {
  readonly #redact: Redact;
  readonly #values: string[];
  readonly #hold: number;
  /** Per text/reasoning part id: the text not yet passed on, and the part it came with. */
  readonly #held = new Map<string, { text: string; part: AgentPart }>();

  constructor(
    env: Record<string, string | undefined>,
    private readonly emit: (p: AgentPart) => void,
  ) {
    const secrets = secretsOf(env);
    this.#redact = secretRedactor(env);
    this.#values = secrets.map(([, v]) => v);
    this.#hold = secrets.length ? secrets[0]![1].length - 1 : 0;
  }

  part(p: AgentPart): void {
    if (!this.#hold) {
      this.emit(redactPart(p, this.#redact));
      return;
    }
    if (p.type === 'tool') {
      this.flush();
      this.emit(redactPart(p, this.#redact));
      return;
    }
    const buf = (this.#held.get(p.id)?.text ?? '') + p.text;
    if (p.state === 'completed') {
      this.#held.delete(p.id);
      this.emit(this.#with(p, buf));
      return;
    }
    const cut = this.#safeCut(buf);
    if (cut < buf.length) this.#held.set(p.id, { text: buf.slice(cut), part: p });
    else this.#held.delete(p.id);
    if (cut > 0) this.emit(this.#with(p, buf.slice(0, cut)));
  }

  /** Passes on every held tail (redacted). */
  flush(): void {
    const held = [...this.#held.values()];
    this.#held.clear();
    for (const h of held) if (h.text) this.emit(this.#with(h.part, h.text));
  }

  #with(p: AgentPart, text: string): AgentPart {
    const clean = this.#redact(text);
    return { ...p, text: clean, content: clean };
  }

  /**
   * Where `buf` may be cut: before the longest tail of it that could still grow into a secret (a
   * proper prefix of one), and never inside a whole secret. Text that cannot be the start of a
   * secret goes out at once, so a long-running agent's short output is not held back.
   */
  #safeCut(buf: string): number {
    let cut = buf.length;
    for (const v of this.#values) {
      for (let k = Math.min(v.length - 1, buf.length); k > 0; k--) {
        if (buf.length - k >= cut) break;
        if (buf.endsWith(v.slice(0, k))) {
          cut = buf.length - k;
          break;
        }
      }
    }
    for (let moved = true; moved && cut > 0; ) {
      moved = false;
      for (const v of this.#values) {
        const at = buf.indexOf(v, Math.max(0, cut - v.length + 1));
        if (at >= 0 && at < cut) {
          cut = at;
          moved = true;
        }
      }
    }
    return cut;
  }
}
