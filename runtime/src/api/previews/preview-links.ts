// Shareable preview links: a URL the owner hands to anyone, reaching one port of one sandbox on
// that port's preview host, until it expires or the owner revokes it. Kept in the operator's
// encrypted store (`preview_links`), so links outlive an operator restart; the token itself is
// never stored (only its SHA-256), is shown once at creation, and is 32 random bytes.
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { RuntimeError } from '../../errors.ts';
import type { ApiStore } from '../deps.ts';

export const LINK_PATH = '/__asb_link';
export const LINK_COOKIE = 'asb_link';
/** Live (unexpired, unrevoked) links per sandbox. */
export const MAX_LINKS_PER_SANDBOX = 20;
/** Revoked or expired links are kept this long (listed as such), then swept. */
const KEEP_ENDED_MS = 24 * 3600_000;

const PreviewLinkSchema = z.object({
  id: z.string().regex(/^pl-[0-9a-f]{16}$/),
  sandboxId: z.string(),
  port: z.number().int().min(1).max(65_535),
  /** SHA-256 of the token, hex. */
  tokenHash: z.string().regex(/^[0-9a-f]{64}$/),
  createdBy: z.string(),
  createdAt: z.number().int(),
  expiresAt: z.number().int(),
  revokedAt: z.number().int().nullable(),
});
export type PreviewLink = z.infer<typeof PreviewLinkSchema>;

const TOKEN_RE = /^pl_[A-Za-z0-9_-]{43}$/;
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

export function linkState(l: PreviewLink, now = Date.now()): 'active' | 'revoked' | 'expired' {
  if (l.revokedAt !== null) return 'revoked';
  return now < l.expiresAt ? 'active' : 'expired';
}

export class PreviewLinks {
  readonly #coll;
  readonly #byHash = new Map<string, PreviewLink>();
  readonly #byId = new Map<string, PreviewLink>();
  #loaded: Promise<void> | undefined;

  constructor(
    store: ApiStore,
    private readonly now: () => number = Date.now,
  ) {
    this.#coll = store.collection('preview_links', PreviewLinkSchema);
  }

  /** The store is single-process: one read at first use, then the in-memory copy is exact. */
  #load(): Promise<void> {
    this.#loaded ??= this.#coll.values().then((all) => {
      for (const l of all) this.#remember(l);
    });
    return this.#loaded;
  }

  #remember(l: PreviewLink): void {
    this.#byId.set(l.id, l);
    this.#byHash.set(l.tokenHash, l);
  }

  async create(f: {
    sandboxId: string;
    port: number;
    createdBy: string;
    ttlMs: number;
  }): Promise<{ link: PreviewLink; token: string }> {
    await this.#load();
    const now = this.now();
    const live = [...this.#byId.values()].filter(
      (l) => l.sandboxId === f.sandboxId && linkState(l, now) === 'active',
    );
    if (live.length >= MAX_LINKS_PER_SANDBOX) {
      throw new RuntimeError(
        'CONFLICT',
        `a sandbox has at most ${MAX_LINKS_PER_SANDBOX} live preview links; revoke one first`,
      );
    }
    const token = `pl_${randomBytes(32).toString('base64url')}`;
    const link: PreviewLink = {
      id: `pl-${randomBytes(8).toString('hex')}`,
      sandboxId: f.sandboxId,
      port: f.port,
      tokenHash: hashOf(token),
      createdBy: f.createdBy.toLowerCase(),
      createdAt: now,
      expiresAt: now + f.ttlMs,
      revokedAt: null,
    };
    await this.#coll.put(link.id, link);
    this.#remember(link);
    return { link, token };
  }

  async list(sandboxId: string): Promise<PreviewLink[]> {
    await this.#load();
    await this.#sweep();
    return [...this.#byId.values()]
      .filter((l) => l.sandboxId === sandboxId)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Revokes a link of this sandbox (idempotent); NOT_FOUND for any other id. */
  async revoke(sandboxId: string, id: string): Promise<PreviewLink> {
    await this.#load();
    const l = this.#byId.get(id);
    if (!l || l.sandboxId !== sandboxId) {
      throw new RuntimeError(
        'NOT_FOUND',
        `no preview link ${id} on this sandbox; list them with GET …/preview-links`,
      );
    }
    if (l.revokedAt !== null) return l;
    const revoked = { ...l, revokedAt: this.now() };
    await this.#coll.put(id, revoked);
    this.#remember(revoked);
    return revoked;
  }

  /** The live link a token opens, for this sandbox and port only; undefined otherwise. */
  async open(token: string, sandboxId: string, port: number): Promise<PreviewLink | undefined> {
    if (!TOKEN_RE.test(token)) return undefined;
    await this.#load();
    const l = this.#byHash.get(hashOf(token));
    if (!l || l.sandboxId !== sandboxId || l.port !== port) return undefined;
    return linkState(l, this.now()) === 'active' ? l : undefined;
  }

  /** Forgets links that ended more than a day ago. */
  async #sweep(): Promise<void> {
    const now = this.now();
    const gone = [...this.#byId.values()].filter(
      (l) => linkState(l, now) !== 'active' && (l.revokedAt ?? l.expiresAt) + KEEP_ENDED_MS < now,
    );
    if (gone.length === 0) return;
    await this.#coll.delMany(gone.map((l) => l.id));
    for (const l of gone) {
      this.#byId.delete(l.id);
      this.#byHash.delete(l.tokenHash);
    }
  }
}
