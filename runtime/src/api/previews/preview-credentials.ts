// Port-preview credentials: a short-lived value bound to one sandbox, one port and its owner, sent
// by the browser as an HttpOnly, SameSite=Strict cookie whose Path is that port's proxy prefix. A
// session token never appears in a URL, and a preview credential opens nothing but that one port.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const PREVIEW_COOKIE = 'asb_preview';

interface PreviewClaims {
  s: string; // sandbox id
  p: number; // container port
  o: string; // owner address, lowercased
  e: number; // expiry, ms since the epoch
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export class PreviewCredentials {
  // One key per process: previews end with the operator process, which is fine for minutes-long use.
  readonly #key = randomBytes(32);
  constructor(
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(`preview.v1.${payload}`).digest();
  }

  mint(sandboxId: string, port: number, owner: string): { value: string; expiresAt: number } {
    const claims: PreviewClaims = {
      s: sandboxId,
      p: port,
      o: owner.toLowerCase(),
      e: this.now() + this.ttlMs,
    };
    const payload = b64(JSON.stringify(claims));
    return { value: `${payload}.${b64(this.#mac(payload))}`, expiresAt: claims.e };
  }

  /** The owner the credential was minted for, if it is genuine, unexpired and for this sandbox and port. */
  verify(value: string, sandboxId: string, port: number): string | undefined {
    const [payload, mac, extra] = value.split('.');
    if (!payload || !mac || extra !== undefined || value.length > 2048) return undefined;
    const want = this.#mac(payload);
    const got = Buffer.from(mac, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
    let claims: PreviewClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as PreviewClaims;
    } catch {
      return undefined;
    }
    if (claims.s !== sandboxId || claims.p !== port || typeof claims.o !== 'string') return undefined;
    if (!(typeof claims.e === 'number' && this.now() < claims.e)) return undefined;
    return claims.o;
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
