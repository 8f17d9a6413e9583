// Keeps the user's credentials out of run events: the value of every secret-named env variable
// (…KEY, …TOKEN, …SECRET, …PASSWORD, …CREDENTIALS) is replaced wherever a harness echoes it.
import type { AgentPart } from './run-stream.ts';

const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
/** Shorter values would redact ordinary words. */
const MIN_SECRET_CHARS = 8;

export type Redact = (text: string) => string;

export function secretRedactor(env: Record<string, string | undefined>): Redact {
  const secrets = Object.entries(env)
    .filter(([k, v]) => SECRET_NAME.test(k) && v && v.length >= MIN_SECRET_CHARS)
    .map(([k, v]) => [k, v!] as const)
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b[1].length - a[1].length);
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
