// Port-preview credentials, bound to one sandbox, one port, its owner and the owner's session:
// - a *ticket* (60 s, single use) rides in the URL the console opens on the preview origin, where
//   it is exchanged for
// - a *cookie* (HttpOnly, host-only on that sandbox port's preview host) that lasts at most
//   previewTtlMs and never past its session.
// Both are checked against the session on every use (SessionAuth.isActive), so signing out (or
// any revocation) closes the port at once. A session token never appears in a URL.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const PREVIEW_COOKIE = 'asb_preview';
export const TICKET_TTL_MS = 60_000;

type Kind = 'ticket' | 'cookie';

interface PreviewClaims {
  k: Kind;
  s: string; // sandbox id
  p: number; // container port
  o: string; // owner address, lowercased
  j: string; // session id
  e: number; // expiry, ms since the epoch
  n: string; // nonce (a ticket is used once)
}

export interface PreviewGrant {
  owner: string;
  jti: string;
  expiresAt: number;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export class PreviewCredentials {
  // One key per process: previews end with the operator process, which is fine for minutes-long use.
  readonly #key = randomBytes(32);
  readonly #usedTickets = new Map<string, number>(); // nonce → expiry
  constructor(
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(`preview.v2.${payload}`).digest();
  }

  mint(
    kind: Kind,
    g: { sandboxId: string; port: number; owner: string; jti: string; expiresAt: number },
  ): { value: string; expiresAt: number } {
    const claims: PreviewClaims = {
      k: kind,
      s: g.sandboxId,
      p: g.port,
      o: g.owner.toLowerCase(),
      j: g.jti,
      e: g.expiresAt,
      n: randomBytes(12).toString('base64url'),
    };
    const payload = b64(JSON.stringify(claims));
    return { value: `${payload}.${b64(this.#mac(payload))}`, expiresAt: claims.e };
  }

  /** The grant of a genuine, unexpired credential of this kind for this sandbox and port. */
  verify(kind: Kind, value: string, sandboxId: string, port: number): PreviewGrant | undefined {
    const [payload, mac, extra] = value.split('.');
    if (!payload || !mac || extra !== undefined || value.length > 2048) return undefined;
    const want = this.#mac(payload);
    const got = Buffer.from(mac, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
    let c: PreviewClaims;
    try {
      c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as PreviewClaims;
    } catch {
      return undefined;
    }
    if (c.k !== kind || c.s !== sandboxId || c.p !== port) return undefined;
    if (typeof c.o !== 'string' || typeof c.j !== 'string' || typeof c.n !== 'string') return undefined;
    if (!(typeof c.e === 'number' && this.now() < c.e)) return undefined;
    return { owner: c.o, jti: c.j, expiresAt: c.e, ...(kind === 'ticket' ? { nonce: c.n } : {}) };
  }

  /** Verifies a ticket and spends it: a second use (a replayed URL) gets undefined. */
  redeem(value: string, sandboxId: string, port: number): PreviewGrant | undefined {
    const g = this.verify('ticket', value, sandboxId, port) as (PreviewGrant & { nonce: string }) | undefined;
    if (!g) return undefined;
    const now = this.now();
    for (const [n, e] of this.#usedTickets) if (e <= now) this.#usedTickets.delete(n);
    if (this.#usedTickets.has(g.nonce)) return undefined;
    this.#usedTickets.set(g.nonce, g.expiresAt);
    return { owner: g.owner, jti: g.jti, expiresAt: g.expiresAt };
  }
}

/** The value of one cookie in a Cookie header (every occurrence: a browser sends the most specific path first). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}
