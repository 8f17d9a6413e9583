// Wallet sign-in: EIP-191 challenge → PASETO v4.local session token, revocation, collection.
//
// State and restarts:
// - Tokens are self-contained and sealed under a key derived from SESSION_AUTH_SECRET, so they
//   stay valid across restarts with no lookup.
// - Revocations and the index of issued sessions (jti → exp, for the 50,000 cap) are persisted in
//   the EncryptedStore and mirrored in memory, so a revoked token stays refused after a restart and
//   `verify` never touches the disk.
// - Open challenges live only in memory: they last 300 s and are single-use, so losing them on a
//   restart costs a client one retry, while persisting them would let unauthenticated callers
//   drive disk writes.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { deriveKey, parseAuthSecret } from '../crypto.ts';
import { RuntimeError } from '../errors.ts';
import type { EncryptedStore, StoreCollection } from '../store/index.ts';
import { createV4Local, type V4Local, type V4LocalKey, v4LocalKey } from './paseto-v4-local.ts';
import { SCOPE_RE } from './scope.ts';
import { recoverSigner } from './signature.ts';

export const PASETO_KEY_SALT = 'tangle-sandbox-blueprint-paseto-v4';
export const PASETO_KEY_INFO = 'session-auth-symmetric-key-v1';

const MAX_TOKEN_LEN = 4096;
const NONCE_RE = /^[0-9a-f]{64}$/;

export interface SessionAuthLimits {
  challengeTtlSec: number;
  sessionTtlSec: number;
  maxChallenges: number;
  maxSessions: number;
}

export const DEFAULT_SESSION_LIMITS: SessionAuthLimits = {
  challengeTtlSec: 300,
  sessionTtlSec: 3600,
  maxChallenges: 10_000,
  maxSessions: 50_000,
};

export interface SessionAuthOptions {
  /** SESSION_AUTH_SECRET, 64 hex chars. */
  secret: string;
  /** Where revocations and the session index persist. */
  store: EncryptedStore;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  limits?: Partial<SessionAuthLimits>;
}

export interface Challenge {
  nonce: string;
  message: string;
  /** Unix seconds. */
  expires_at: number;
}

export interface Session {
  token: string;
  /** Lowercase 0x address that signed the challenge. */
  address: string;
  /** Unix seconds. */
  expires_at: number;
}

export interface SessionClaims {
  address: string;
  scope?: string;
  /** Unix seconds. */
  exp: number;
  /** Unix seconds. */
  iat: number;
  jti: string;
}

export interface CollectResult {
  challenges: number;
  sessions: number;
  revocations: number;
}

const TokenClaims = z.object({
  address: z.string().regex(/^0x[0-9a-f]{40}$/),
  scope: z.string().regex(SCOPE_RE).optional(),
  iat: z.string(),
  exp: z.string(),
  jti: z.string().regex(/^[0-9a-f]{32}$/),
});

const ExpiryRecord = z.object({ exp: z.number() });
type ExpiryRecord = z.infer<typeof ExpiryRecord>;

export function challengeMessage(nonce: string, expiresAtSec: number): string {
  return `Sign this message to authenticate with Tangle Sandbox.\n\nNonce: ${nonce}\nExpires: ${expiresAtSec}`;
}

function unauthorized(message: string, cause?: unknown): RuntimeError {
  return new RuntimeError('UNAUTHORIZED', message, cause === undefined ? {} : { cause });
}

export class SessionAuth {
  readonly limits: SessionAuthLimits;
  readonly #key: V4LocalKey;
  readonly #paseto: V4Local;
  readonly #clock: () => number;
  readonly #challenges = new Map<string, number>(); // nonce → expires_at (s)
  readonly #sessions = new Map<string, number>(); // jti → exp (s)
  readonly #revoked = new Map<string, number>(); // jti → exp (s)
  readonly #sessionStore: StoreCollection<ExpiryRecord>;
  readonly #revokedStore: StoreCollection<ExpiryRecord>;

  private constructor(opts: SessionAuthOptions) {
    const secret = parseAuthSecret(opts.secret);
    this.#key = v4LocalKey(deriveKey(secret, PASETO_KEY_SALT, PASETO_KEY_INFO));
    this.#paseto = createV4Local();
    this.#clock = opts.clock ?? Date.now;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...opts.limits };
    this.#sessionStore = opts.store.collection('auth-sessions', ExpiryRecord);
    this.#revokedStore = opts.store.collection('auth-revocations', ExpiryRecord);
  }

  /** Builds the service and loads persisted revocations and sessions. */
  static async create(opts: SessionAuthOptions): Promise<SessionAuth> {
    const auth = new SessionAuth(opts);
    for (const [jti, r] of await auth.#sessionStore.entries()) auth.#sessions.set(jti, r.exp);
    for (const [jti, r] of await auth.#revokedStore.entries()) auth.#revoked.set(jti, r.exp);
    return auth;
  }

  #nowSec(): number {
    return Math.floor(this.#clock() / 1000);
  }

  /** A fresh single-use challenge; CAPACITY_EXHAUSTED when 10,000 are already open. */
  createChallenge(): Challenge {
    const now = this.#nowSec();
    if (this.#challenges.size >= this.limits.maxChallenges) {
      this.#pruneMemory(this.#challenges, now);
      if (this.#challenges.size >= this.limits.maxChallenges) {
        throw new RuntimeError(
          'CAPACITY_EXHAUSTED',
          'too many sign-in challenges are open; retry in a few minutes',
          { details: { retry_after_ms: 30_000 } },
        );
      }
    }
    const nonce = randomBytes(32).toString('hex');
    const expires_at = now + this.limits.challengeTtlSec;
    this.#challenges.set(nonce, expires_at);
    return { nonce, message: challengeMessage(nonce, expires_at), expires_at };
  }

  /**
   * Exchanges a signed challenge for a session token. The challenge is consumed by the first
   * attempt, right or wrong, so a nonce cannot be replayed or ground against. `address`, when
   * given, must equal the recovered signer.
   */
  async createSession(input: {
    nonce: unknown;
    signature: unknown;
    scope?: unknown;
    address?: unknown;
  }): Promise<Session> {
    const { nonce, signature, scope, address } = input;
    if (scope !== undefined && (typeof scope !== 'string' || !SCOPE_RE.test(scope))) {
      throw new RuntimeError(
        'VALIDATION',
        'scope must be "sandbox:{id}" or "instance:{id}" (id: letters, digits, . _ : -)',
      );
    }
    if (typeof nonce !== 'string' || !NONCE_RE.test(nonce)) {
      throw unauthorized('nonce must be the 64-hex-char nonce of a challenge from /api/auth/challenge');
    }
    const expiresAt = this.#challenges.get(nonce);
    this.#challenges.delete(nonce);
    const now = this.#nowSec();
    if (expiresAt === undefined) {
      throw unauthorized('unknown or already used challenge; request a new one');
    }
    if (now > expiresAt) throw unauthorized('challenge expired; request a new one');

    const signer = await recoverSigner(challengeMessage(nonce, expiresAt), signature);
    if (address !== undefined && (typeof address !== 'string' || address.toLowerCase() !== signer)) {
      throw unauthorized('signature was not made by the given address');
    }

    if (this.#sessions.size >= this.limits.maxSessions) {
      this.#pruneMemory(this.#sessions, now);
      if (this.#sessions.size >= this.limits.maxSessions) {
        throw new RuntimeError(
          'CAPACITY_EXHAUSTED',
          'the operator holds the maximum number of sessions; retry later',
          { details: { retry_after_ms: 60_000 } },
        );
      }
    }
    const jti = randomBytes(16).toString('hex');
    const exp = now + this.limits.sessionTtlSec;
    const claims: Record<string, string> = { address: signer, jti };
    if (scope !== undefined) claims.scope = scope as string;
    const token = await this.#paseto.Encrypt(this.#key, claims, {
      now: new Date(now * 1000),
      expiresIn: this.limits.sessionTtlSec,
    });
    this.#sessions.set(jti, exp);
    await this.#sessionStore.put(jti, { exp });
    return { token, address: signer, expires_at: exp };
  }

  /** The claims of a valid, unexpired, unrevoked token; UNAUTHORIZED otherwise. */
  async verify(token: unknown): Promise<SessionClaims> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LEN) {
      throw unauthorized('missing or malformed session token; sign in via /api/auth/challenge');
    }
    let raw: unknown;
    try {
      raw = (await this.#paseto.Decrypt(this.#key, token, { now: new Date(this.#clock()) })).claims;
    } catch (cause) {
      const expired = (cause as { code?: string }).code === 'ERR_PASETO_CLAIM_VALIDATION';
      throw unauthorized(
        expired ? 'session expired; sign in again' : 'invalid session token; sign in again',
        cause,
      );
    }
    const parsed = TokenClaims.safeParse(raw);
    if (!parsed.success) throw unauthorized('session token has unexpected claims; sign in again');
    const c = parsed.data;
    if (this.#revoked.has(c.jti)) throw unauthorized('session revoked; sign in again');
    const out: SessionClaims = {
      address: c.address,
      exp: Math.floor(Date.parse(c.exp) / 1000),
      iat: Math.floor(Date.parse(c.iat) / 1000),
      jti: c.jti,
    };
    if (c.scope !== undefined) out.scope = c.scope;
    return out;
  }

  /** Revokes a valid token until its expiry; persisted, so it holds across restarts. */
  async revoke(token: unknown): Promise<{ revoked: true }> {
    const claims = await this.verify(token);
    this.#revoked.set(claims.jti, claims.exp);
    this.#sessions.delete(claims.jti);
    await this.#revokedStore.put(claims.jti, { exp: claims.exp });
    await this.#sessionStore.del(claims.jti);
    return { revoked: true };
  }

  /** Drops expired challenges, sessions and revocations (memory and store). Call every 5 min. */
  async collect(): Promise<CollectResult> {
    const now = this.#nowSec();
    const challenges = this.#pruneMemory(this.#challenges, now);
    const sessions = this.#pruneMemory(this.#sessions, now);
    const revoked = this.#pruneMemory(this.#revoked, now);
    // The store may hold entries this process never loaded (written before a crash), so sweep it.
    const staleSessions = (await this.#sessionStore.entries()).filter(([, r]) => r.exp < now);
    const staleRevoked = (await this.#revokedStore.entries()).filter(([, r]) => r.exp < now);
    await this.#sessionStore.delMany(staleSessions.map(([id]) => id));
    await this.#revokedStore.delMany(staleRevoked.map(([id]) => id));
    return {
      challenges,
      sessions: Math.max(sessions, staleSessions.length),
      revocations: Math.max(revoked, staleRevoked.length),
    };
  }

  /** Current counts (for metrics and health). */
  stats(): { challenges: number; sessions: number; revocations: number } {
    return {
      challenges: this.#challenges.size,
      sessions: this.#sessions.size,
      revocations: this.#revoked.size,
    };
  }

  /** Removes entries whose expiry (s) has passed; an entry is valid through its expiry second. */
  #pruneMemory(map: Map<string, number>, now: number): number {
    let n = 0;
    for (const [k, exp] of map) {
      if (exp < now) {
        map.delete(k);
        n++;
      }
    }
    return n;
  }
}
