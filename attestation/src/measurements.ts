// The caller's measurement allow-list: parsing (JSON entries or bare hex) and matching against
// verified facts. No node built-ins (the browser entry uses it too).
import { fromHex, toHex } from './bytes.ts';
import { AttestationError } from './errors.ts';
import type { EvidenceFacts, TeeKind } from './types.ts';

/** An allow-list entry: measurement name → hex; `*` names the primary one (mrtd, measurement, pcr0). */
export type MeasurementEntry = Record<string, string>;
const PRIMARY: Record<TeeKind, string> = { tdx: 'mrtd', sev: 'measurement', nitro: 'pcr0' };

/** A JSON array of entries, or hex values separated by commas/whitespace (each pins the primary one). */
export function parseAllowList(text: string): MeasurementEntry[] {
  const t = text.trim();
  if (!t) return [];
  if (t.startsWith('[')) {
    const parsed: unknown = JSON.parse(t);
    if (!Array.isArray(parsed) || !parsed.every((e) => e && typeof e === 'object' && !Array.isArray(e))) {
      throw new AttestationError(
        'BAD_INPUT',
        'a measurement allow-list file is a JSON array of {name: hex} objects',
      );
    }
    return parsed.map((e) =>
      Object.fromEntries(Object.entries(e as object).map(([k, v]) => [k, toHex(fromHex(String(v), k))])),
    );
  }
  return t.split(/[\s,]+/).map((h) => ({ '*': toHex(fromHex(h, 'measurement')) }));
}

export function measurementAllowed(facts: EvidenceFacts, allow: readonly MeasurementEntry[]): boolean {
  return allow.some((entry) => {
    const keys = Object.keys(entry);
    return (
      keys.length > 0 &&
      keys.every((k) => {
        const have = facts.measurements[k === '*' ? PRIMARY[facts.tee] : k];
        return have !== undefined && have === entry[k]!.toLowerCase();
      })
    );
  });
}
