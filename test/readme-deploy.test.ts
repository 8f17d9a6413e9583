// README's "Deploying against a real Tangle network" is the walk for the three roles: it must be
// there, every command in its code blocks must be a real command taking the flags shown, every
// variable it exports must be documented, and every file it cites as evidence must exist.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const start = README.indexOf('\n## Deploying against a real Tangle network\n');
const rest = README.slice(start + 1);
const next = rest.slice(3).search(/\n## /);
const SECTION = next < 0 ? rest : rest.slice(0, next + 3);

/** The section's shell code blocks, continuation lines joined. */
const commands = (): string[] =>
  [...SECTION.matchAll(/```(?:bash|sh)\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1]!.replace(/\\\n\s*/g, ' ').split('\n'))
    .map((l) => l.trim())
    .filter(Boolean);

/** `--help` of a bundled program (built by scripts/build-bins.mjs, as CI builds it). */
const help = (bin: string, args: string[]): Promise<string> =>
  new Promise((res) =>
    execFile(process.execPath, [join(ROOT, bin), ...args, '--help'], (_e, out, err) => res(`${out}${err}`)),
  );
const OPERATOR = 'blueprint-bin/dist/main.mjs';
const CLIENT = 'client/bin/agent-sandbox.mjs';

/** Each `agent-sandbox-operator SUB …` / `agent-sandbox SUB …` invocation: program, subcommand, flags. */
function invocations(): Array<{ bin: string; sub: string; flags: string[]; line: string }> {
  const out: Array<{ bin: string; sub: string; flags: string[]; line: string }> = [];
  for (const line of commands()) {
    const code = line.replace(/#.*$/, '');
    for (const m of code.matchAll(/\bagent-sandbox(-operator)?\s+([a-z][a-z-]*)((?:\s+[^\s|;&]+)*)/g)) {
      const flags = [...(m[3] ?? '').matchAll(/\s(--[a-z][a-z-]*)/g)].map((f) => f[1]!);
      out.push({ bin: m[1] ? OPERATOR : CLIENT, sub: m[2]!, flags, line });
    }
  }
  return out;
}

describe('README: Deploying against a real Tangle network', () => {
  it('walks the three roles and says what was and was not exercised', () => {
    expect(start, 'the section is there').toBeGreaterThan(0);
    for (const heading of [
      '### 1. Blueprint developer',
      '### 2. Operator',
      '### 3. User',
      '### The real-protocol mode',
    ])
      expect(SECTION, heading).toContain(heading);
    expect(SECTION).toContain('**What was and was not exercised here.**');
    expect(SECTION).toMatch(/\*\*Not\*\* exercised/);
  });

  // One --help per program and subcommand, all at once (each is a node start).
  it('names only real commands, with flags their --help lists', { timeout: 300_000 }, async () => {
    const seen = invocations();
    expect(seen.length).toBeGreaterThan(10);
    const keys = [...new Set(seen.map((x) => `${x.bin} ${x.sub}`))];
    const texts = await Promise.all([
      help(OPERATOR, []),
      help(CLIENT, []),
      ...keys.map((k) => help(k.split(' ')[0]!, [k.split(' ')[1]!])),
    ]);
    const top: Record<string, string> = { [OPERATOR]: texts[0]!, [CLIENT]: texts[1]! };
    const subHelp = new Map(keys.map((k, i) => [k, texts[i + 2]!]));
    for (const { bin, sub, flags, line } of seen) {
      expect(top[bin], `${line}: ${sub} is a command of ${bin}`).toMatch(new RegExp(`^\\s+${sub}\\s`, 'm'));
      for (const f of flags) {
        if (f === '--help' || f === '--json') continue;
        expect(subHelp.get(`${bin} ${sub}`), `${line}: ${sub} takes ${f}`).toContain(f);
      }
    }
  });

  it('exports only documented variables', async () => {
    const clientHelp = await help(CLIENT, []);
    for (const line of commands().filter((l) => l.startsWith('export '))) {
      for (const m of line.matchAll(/\b([A-Z][A-Z0-9_]+)=/g)) {
        const name = m[1]!;
        const documented = README.includes(`| \`${name}\` |`) || clientHelp.includes(name);
        expect(documented, `${name} (${line}) is in the Configuration table or agent-sandbox --help`).toBe(
          true,
        );
      }
    }
  });

  it('cites only files that exist', () => {
    const cited = [
      ...SECTION.matchAll(
        /\b((?:test|contracts|scripts|blueprint-bin|blueprint-lib|runtime|sdk|devnet|client)\/[\w./-]+\.(?:ts|sol))\b/g,
      ),
    ].map((m) => m[1]!);
    expect(cited.length).toBeGreaterThan(5);
    for (const f of new Set(cited)) expect(existsSync(join(ROOT, f)), f).toBe(true);
  });
});
