// contracts/README.md's "Every call and event" table is the contract's reference: each function
// and event of AgentSandboxBlueprint's generated ABI has a row, and each row names one of them.
import { readFileSync } from 'node:fs';
import { agentSandboxBlueprintAbi } from '@agent-sandbox/contracts';
import { describe, expect, it } from 'vitest';

const README = readFileSync(new URL('../contracts/README.md', import.meta.url), 'utf8');

/** `[name, kind column]` of every backticked call in the first column of the table's rows. */
function documented(): Array<{ name: string; kind: string }> {
  const section = README.slice(README.indexOf('## Every call and event'));
  const out: Array<{ name: string; kind: string }> = [];
  for (const row of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const [first = '', kind = ''] = row.split(' | ');
    for (const m of first.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)\(/g))
      out.push({ name: m[1]!, kind: kind.trim() });
  }
  return out;
}

describe('contracts/README.md calls and events', () => {
  it('lists every function and event of the ABI, and nothing else', () => {
    const abi = agentSandboxBlueprintAbi
      .filter((i) => i.type === 'function' || i.type === 'event')
      .map((i) => `${i.type === 'event' ? 'event' : 'function'} ${(i as { name: string }).name}`)
      .sort();
    const doc = documented()
      .map((d) => `${d.kind === 'event' ? 'event' : 'function'} ${d.name}`)
      .sort();
    expect(doc).toEqual([...new Set(abi)]);
  });

  it('calls a function a view only when the ABI says so', () => {
    const mutability = new Map(
      agentSandboxBlueprintAbi
        .filter((i) => i.type === 'function')
        .map((i) => [(i as { name: string }).name, (i as { stateMutability: string }).stateMutability]),
    );
    for (const d of documented().filter((x) => x.kind !== 'event')) {
      const m = mutability.get(d.name);
      expect(['view', 'pure'].includes(m ?? ''), `${d.name} is ${m}, documented as ${d.kind}`).toBe(
        d.kind === 'view' || d.kind === 'pure',
      );
    }
  });
});
