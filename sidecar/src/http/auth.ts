// Bearer-token auth for every route but /health: constant-time comparison, `?token=` allowed on SSE routes.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SidecarError } from '../errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The expected token (its digest), shared by every BearerAuth made over it: the boot router and
 * the app's (a separate bundle in the image, with its own copy of this class) check and rotate
 * one token, so a rotation holds for every route at once.
 */
export interface TokenCell {
  digest: Buffer;
}

export class BearerAuth {
  readonly cell: TokenCell;
  constructor(token: string | TokenCell) {
    // Hashing first makes both sides equal length, so timingSafeEqual never leaks the length.
    this.cell = typeof token === 'string' ? { digest: digest(token) } : token;
  }

  /** Replaces the token (a warm-pool claim): from now on only `token` is accepted. */
  rotate(token: string): void {
    this.cell.digest = digest(token);
  }

  /** Throws 401 when no token was sent, 403 when it is wrong. */
  check(req: IncomingMessage, query: URLSearchParams, allowQueryToken: boolean): void {
    const header = req.headers.authorization;
    let given: string | undefined;
    if (header) {
      const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(header);
      if (!m) throw new SidecarError('UNAUTHORIZED', 'Authorization header must be "Bearer <token>"', 401);
      given = m[1];
    } else if (allowQueryToken) {
      given = query.get('token') ?? undefined;
    }
    if (!given) {
      throw new SidecarError(
        'UNAUTHORIZED',
        allowQueryToken
          ? 'missing token: send Authorization: Bearer <token> or ?token=<token>'
          : 'missing token: send Authorization: Bearer <token>',
        401,
      );
    }
    if (!timingSafeEqual(digest(given), this.cell.digest)) {
      throw new SidecarError('FORBIDDEN', 'invalid token', 403);
    }
  }
}
