// The origin port previews are served from, apart from the console's: PREVIEW_ORIGIN is a URL
// whose host starts with a `*` label (`https://*.preview.example.com`), and each sandbox port gets
// its own host in it (`p3000-sbx-….preview.example.com`), so a sandbox's page shares no origin
// (storage, DOM, window handles) with the console or with another sandbox or port. Unset, an
// operator reached on a loopback host serves previews at `http://*.localhost:<its port>`
// (browsers resolve every *.localhost name to loopback); elsewhere previews are refused.
import { RuntimeError } from '../../errors.ts';

export interface PreviewOrigin {
  protocol: 'http:' | 'https:';
  /** What follows the `*` label, with the port: `.preview.example.com` or `.localhost:9090`. */
  suffix: string;
}

const HOST_LABEL = /^p([1-9]\d{0,4})-([a-z0-9][a-z0-9-]{0,56})$/;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Parses PREVIEW_ORIGIN; CONFIG_INVALID naming what is wrong. */
export function parsePreviewOrigin(raw: string): PreviewOrigin {
  const bad = (why: string) =>
    new RuntimeError('CONFIG_INVALID', `PREVIEW_ORIGIN ${why} (expected e.g. https://*.preview.example.com)`);
  const m = /^(https?):\/\/\*(\.[a-z0-9.-]+)(:\d{1,5})?\/?$/i.exec(raw.trim());
  if (!m) throw bad('must be http(s)://*.<domain>[:port] with nothing after it');
  const host = m[2]!.toLowerCase();
  if (host.includes('..') || host.endsWith('.')) throw bad('has an empty label');
  return { protocol: `${m[1]!.toLowerCase()}:` as PreviewOrigin['protocol'], suffix: `${host}${m[3] ?? ''}` };
}

/**
 * The preview origin in effect for a request that reached the API at `host`: the configured one,
 * or for a loopback host the `*.localhost` default on the same port; undefined when there is none.
 */
export function previewOriginFor(
  configured: PreviewOrigin | undefined,
  host: string | undefined,
): PreviewOrigin | undefined {
  if (configured) return configured;
  if (!host) return undefined;
  const m = /^(\[[^\]]+\]|[^:]+)(:\d{1,5})?$/.exec(host.toLowerCase());
  if (!m || !LOOPBACK.has(m[1]!)) return undefined;
  return { protocol: 'http:', suffix: `.localhost${m[2] ?? ''}` };
}

/** The host label of a sandbox port: `p<port>-<sandbox id>`; undefined when the id cannot be one. */
export function previewLabel(sandboxId: string, port: number): string | undefined {
  const label = `p${port}-${sandboxId}`;
  return HOST_LABEL.test(label) ? label : undefined;
}

export function previewBase(origin: PreviewOrigin, sandboxId: string, port: number): string {
  const label = previewLabel(sandboxId, port);
  if (!label) {
    throw new RuntimeError('CONFLICT', `sandbox id ${sandboxId} cannot be a preview host name`);
  }
  return `${origin.protocol}//${label}${origin.suffix}`;
}

/** The sandbox and port a request's Host names on the preview origin, or undefined (not a preview host). */
export function matchPreviewHost(
  configured: PreviewOrigin | undefined,
  host: string | undefined,
): { sandboxId: string; port: number } | undefined {
  const h = host?.toLowerCase();
  if (!h) return undefined;
  const dot = h.indexOf('.');
  if (dot <= 0) return undefined;
  const suffix = h.slice(dot);
  // Unconfigured: the loopback default, `*.localhost` on whatever port reached us.
  const ours = configured ? suffix === configured.suffix : /^\.localhost(:\d{1,5})?$/.test(suffix);
  if (!ours) return undefined;
  const m = HOST_LABEL.exec(h.slice(0, dot));
  if (!m) return undefined;
  const port = Number(m[1]);
  return port >= 1 && port <= 65_535 ? { sandboxId: m[2]!, port } : undefined;
}
