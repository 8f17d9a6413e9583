// Image references (Docker's grammar, the parts a pull needs) and the operator's image allow-list.
// A reference names a registry when its first component has a dot or a port, or is `localhost`:
// `registry.example.com/team/tool:1`, `127.0.0.1:5000/debian@sha256:…`. Only those are pulled; a
// bare name (`custom:1`) is an image the operator built or loaded into its own engine.

export interface ImageRef {
  /** Registry host[:port]; undefined for a bare (local) name. */
  registry: string | undefined;
  /** Repository path below the registry: `team/tool`. */
  repository: string;
  tag: string | undefined;
  /** `sha256:<64 hex>` when pinned. */
  digest: string | undefined;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST = /^(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:]+\])(?::[0-9]{1,5})?$/;

/** The grammar a reference follows, for the error that refuses one. */
export const IMAGE_REF_FORM = '[registry[:port]/]repository[:tag][@sha256:<64 hex>], lowercase repository';

/** Parses a reference; undefined when it is not one (the caller says what was wrong). */
export function parseImageRef(input: string): ImageRef | undefined {
  const s = input.trim();
  if (!s || s.length > 255 || /\s/.test(s)) return undefined;
  let rest = s;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  const parts = rest.split('/');
  let registry: string | undefined;
  const first = parts[0]!;
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!HOST.test(first)) return undefined;
    registry = first.toLowerCase();
    parts.shift();
  }
  let tag: string | undefined;
  const last = parts[parts.length - 1]!;
  const colon = last.lastIndexOf(':');
  if (colon >= 0) {
    tag = last.slice(colon + 1);
    parts[parts.length - 1] = last.slice(0, colon);
    if (!TAG.test(tag)) return undefined;
  }
  if (parts.length === 0 || !parts.every((p) => COMPONENT.test(p))) return undefined;
  return { registry, repository: parts.join('/'), tag, digest };
}

/** `registry/repository`, the name a pull and the engine's RepoDigests use. */
export function repoName(r: ImageRef): string {
  return r.registry ? `${r.registry}/${r.repository}` : r.repository;
}

/** The reference to pull: by digest when pinned (a tag beside it is ignored, as Docker does). */
export function pullRef(r: ImageRef): string {
  return r.digest ? `${repoName(r)}@${r.digest}` : `${repoName(r)}:${r.tag ?? 'latest'}`;
}

/**
 * One allow-list entry: an exact reference (`custom:1`, `reg.example/app@sha256:…`), a repository
 * (`reg.example/team/app`: any tag or digest of it), or a prefix (`reg.example/team/*`: any
 * repository under it; `reg.example/*`: anything on that registry).
 */
export function allowListed(ref: string, entries: readonly string[]): boolean {
  const r = parseImageRef(ref);
  if (!r) return false;
  const name = repoName(r);
  for (const raw of entries) {
    const e = raw.trim();
    if (!e) continue;
    if (e === ref.trim()) return true;
    if (e.endsWith('/*')) {
      const prefix = e.slice(0, -1).toLowerCase();
      // A prefix entry must name a registry: `*` alone or a bare `team/*` would allow Docker Hub.
      const host = parseImageRef(`${prefix}x`);
      if (host?.registry && r.registry && name.startsWith(prefix)) return true;
      continue;
    }
    const a = parseImageRef(e);
    if (!a || repoName(a) !== name) continue;
    if (!a.tag && !a.digest) return true;
    if (a.digest ? a.digest === r.digest : a.tag === (r.tag ?? 'latest') && !r.digest) return true;
  }
  return false;
}
