// Finds the Debian mirror this machine's apt already uses, so the image build never hard-codes a host.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SidecarError } from '@agent-sandbox/sidecar';

export interface AptSource {
  types: string[];
  uris: string[];
  suites: string[];
  components: string[];
}

/** Parses deb822 `.sources` text into its enabled stanzas. */
export function parseDeb822Sources(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last = '';
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#') || raw.trim() === '') continue;
      if (/^\s/.test(raw) && last) {
        fields.set(last, `${fields.get(last) ?? ''} ${raw.trim()}`);
        continue;
      }
      const i = raw.indexOf(':');
      if (i < 0) continue;
      last = raw.slice(0, i).trim().toLowerCase();
      fields.set(last, raw.slice(i + 1).trim());
    }
    if ((fields.get('enabled') ?? 'yes').toLowerCase() === 'no') continue;
    const list = (k: string) => (fields.get(k) ?? '').split(/\s+/).filter(Boolean);
    if (list('uris').length === 0) continue;
    out.push({
      types: list('types'),
      uris: list('uris'),
      suites: list('suites'),
      components: list('components'),
    });
  }
  return out;
}

/** Parses one-line `sources.list` text (`deb [opts] URI suite comp...`). */
export function parseOneLineSources(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) continue;
    const parts = line
      .replace(/\[[^\]]*\]/, ' ')
      .split(/\s+/)
      .filter(Boolean);
    const [type, uri, suite, ...components] = parts;
    if (!type || !uri || !suite) continue;
    out.push({ types: [type], uris: [uri], suites: [suite], components });
  }
  return out;
}

/** Picks the plain archive mirror (not -security, not third-party) that serves `suite`. */
export function pickDebianMirror(sources: AptSource[], suite: string): string | undefined {
  const candidates = sources.filter(
    (s) => s.types.includes('deb') && s.suites.includes(suite) && s.components.includes('main'),
  );
  for (const s of candidates) {
    const uri = s.uris.find((u) => /^https?:\/\//.test(u) && !/security/.test(u));
    if (uri) return uri.replace(/\/+$/, '');
  }
  return undefined;
}

/**
 * Reads /etc/apt/sources.list and sources.list.d at call time. `AGENT_SANDBOX_DEBIAN_MIRROR`
 * overrides it for machines whose apt points somewhere debootstrap cannot use.
 */
export function debianMirror(suite: string, aptDir = '/etc/apt'): string {
  const override = process.env['AGENT_SANDBOX_DEBIAN_MIRROR'];
  if (override) return override.replace(/\/+$/, '');
  const sources: AptSource[] = [];
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  sources.push(...parseOneLineSources(read(join(aptDir, 'sources.list'))));
  let entries: string[] = [];
  try {
    entries = readdirSync(join(aptDir, 'sources.list.d')).sort();
  } catch {}
  for (const name of entries) {
    const p = join(aptDir, 'sources.list.d', name);
    if (name.endsWith('.sources')) sources.push(...parseDeb822Sources(read(p)));
    else if (name.endsWith('.list')) sources.push(...parseOneLineSources(read(p)));
  }
  const mirror = pickDebianMirror(sources, suite);
  if (!mirror) {
    throw new SidecarError(
      'NO_DEBIAN_MIRROR',
      `no apt source in ${aptDir} serves Debian '${suite}' main; add one or set AGENT_SANDBOX_DEBIAN_MIRROR`,
    );
  }
  return mirror;
}
