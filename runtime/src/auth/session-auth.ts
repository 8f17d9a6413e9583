// Wallet sign-in: EIP-4361 challenge (EIP-191 signed) → PASETO v4.local session token,
// revocation, collection.
//
// State and restarts:
// - Tokens are self-contained and sealed under a key derived from SESSION_AUTH_SECRET, so they
//   stay valid across restarts with no lookup.
// - Revocations and the index of issued sessions (jti → exp, for the 50,000 cap) are persisted in
//   the EncryptedStore and mirrored in memory, so a revoked token stays refused after a restart and
//   `verify` never touches the disk.
// - Challenges are stateless (challenge.ts: a MAC'd, self-expiring nonce), so handing them out
//   costs nothing and no caller can exhaust them for others. Only redeemed nonces are recorded
//   (memory and store, until they expire), after the signature checked out, so a nonce is
//   single-use across restarts and only a successful sign-in writes to disk.
// - Each address holds at most `maxSessionsPerAddress` sessions; signing in beyond that revokes
//   that address's oldest session, so one wallet cannot fill the global cap.

import { randomBytes } from 'node:crypto';
import type { Address } from 'viem';
import { deriveKey, parseAuthSecret } from '../crypto.ts';
import { RuntimeError } from '../errors.ts';
import type { StoreCollection } from '../store/index.ts';
import {
  ChallengeMinter,
  legacyMessage,
  resolveSigned,
  type SiweBinding,
  siweMessage,
  siweOrigin,
} from './challenge.ts';
import { createV4Local, type V4Local, type V4LocalKey, v4LocalKey } from './paseto-v4-local.ts';
import { SCOPE_RE } from './scope.ts';
import {
  ADDRESS_RE,
  CHALLENGE_MAC_INFO,
  type Challenge,
  type CollectResult,
  DEFAULT_SESSION_LIMITS,
  ExpiryRecord,
  MAX_TOKEN_LEN,
  PASETO_KEY_INFO,
  PASETO_KEY_SALT,
  type Session,
  type SessionAuthLimits,
  type SessionAuthOptions,
  type SessionClaims,
  TokenClaims,
} from './session-types.ts';
import { recoverSigner } from './signature.ts';

export {
  CHALLENGE_MAC_INFO,
  challengeMessage,
  DEFAULT_SESSION_LIMITS,
  PASETO_KEY_INFO,
  PASETO_KEY_SALT,
} from './session-types.ts';

function unauthorized(message: string, cause?: unknown): RuntimeError {
  return new RuntimeError('UNAUTHORIZED', message, cause === undefined ? {} : { cause });
}

export class SessionAuth {
  readonly limits: SessionAuthLimits;
  readonly allowLegacyMessage: boolean;
  readonly #siwe: SiweBinding;
  readonly #minter: ChallengeMinter;
  readonly #key: V4LocalKey;
  readonly #paseto: V4Local;
  readonly #clock: () => number;
  readonly #redeemed = new Map<string, number>(); // nonce → expires_at (s)
  readonly #sessions = new Map<string, ExpiryRecord>(); // jti → {exp, address}
  readonly #byAddress = new Map<string, string[]>(); // address → jtis, oldest first
  readonly #revoked = new Map<string, number>(); // jti → exp (s)
  readonly #sessionStore: StoreCollection<ExpiryRecord>;
  readonly #revokedStore: StoreCollection<ExpiryRecord>;
  readonly #redeemedStore: StoreCollection<ExpiryRecord>;
  #lastAt = 0;

  private constructor(opts: SessionAuthOptions) {
    const secret = parseAuthSecret(opts.secret);
    this.#key = v4LocalKey(deriveKey(secret, PASETO_KEY_SALT, PASETO_KEY_INFO));
    this.#minter = new ChallengeMinter(deriveKey(secret, PASETO_KEY_SALT, CHALLENGE_MAC_INFO));
    this.#paseto = createV4Local();
    this.#clock = opts.clock ?? Date.now;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...opts.limits };
    if (!Number.isSafeInteger(opts.siwe?.chainId) || opts.siwe.chainId <= 0) {
      throw new RuntimeError(
        'CONFIG_INVALID',
        'sign-in needs the chain id its messages name (a positive integer)',
      );
    }
    this.#siwe = opts.siwe;
    this.allowLegacyMessage = opts.allowLegacyMessage ?? false;
    this.#sessionStore = opts.store.collection('auth-sessions', ExpiryRecord);
    this.#revokedStore = opts.store.collection('auth-revocations', ExpiryRecord);
    this.#redeemedStore = opts.store.collection('auth-redeemed', ExpiryRecord);
  }

  /** Builds the service and loads persisted revocations, sessions and redeemed nonces. */
  static async create(opts: SessionAuthOptions): Promise<SessionAuth> {
    const auth = new SessionAuth(opts);
    if (typeof opts.siwe.publicUrl === 'string') siweOrigin(opts.siwe); // a bad URL fails at start
    const sessions = (await auth.#sessionStore.entries()).sort(
      ([, a], [, b]) => (a.at ?? a.exp * 1000) - (b.at ?? b.exp * 1000),
    );
    for (const [jti, r] of sessions) {
      auth.#track(jti, r);
      auth.#lastAt = Math.max(auth.#lastAt, r.at ?? 0);
    }
    for (const [jti, r] of await auth.#revokedStore.entries()) auth.#revoked.set(jti, r.exp);
    for (const [nonce, r] of await auth.#redeemedStore.entries()) auth.#redeemed.set(nonce, r.exp);
    return auth;
  }

  #nowSec(): number {
    return Math.floor(this.#clock() / 1000);
  }

  /**
   * A fresh challenge. With `address`: the EIP-4361 message naming this operator's public URL,
   * chain, the address, a nonce, issue and expiry times. Without: the legacy plain message when
   * AUTH_ALLOW_LEGACY_MESSAGE is on, else VALIDATION. Nothing is stored.
   */
  createChallenge(input: { address?: unknown } = {}): Challenge {
    const iat = this.#nowSec();
    const exp = iat + this.limits.challengeTtlSec;
    const { address } = input;
    let nonce: string;
    let message: string;
    if (address !== undefined) {
      if (typeof address !== 'string' || !ADDRESS_RE.test(address)) {
        throw new RuntimeError('VALIDATION', 'address must be a 0x-prefixed 20-byte hex address');
      }
      const a = address.toLowerCase();
      nonce = this.#minter.mint(a, iat, exp);
      message = siweMessage(this.#siwe, a as Address, nonce, { iat, exp });
    } else if (this.allowLegacyMessage) {
      nonce = this.#minter.mint(undefined, iat, exp);
      message = legacyMessage(nonce, exp);
    } else {
      throw new RuntimeError(
        'VALIDATION',
        'send {"address":"0x…"} (the wallet that will sign): the sign-in message (EIP-4361) names the signer',
      );
    }
    return { nonce, message, challenge: message, issued_at: iat, expires_at: exp };
  }

  /**
   * Exchanges a signed challenge for a session token. The message signed is rebuilt from the
   * nonce and the address (given, or read from `message`, which must then be exactly the message
   * this operator issued); domain, URI, chain, nonce MAC and times are checked, and the signature
   * must be low-s and recover to that address. A nonce redeems once. The legacy message is
   * accepted only with the legacy switch on.
   */
  async createSession(input: {
    nonce?: unknown;
    signature: unknown;
    scope?: unknown;
    address?: unknown;
    message?: unknown;
  }): Promise<Session> {
    const { signature, scope, address, message } = input;
    if (scope !== undefined && (typeof scope !== 'string' || !SCOPE_RE.test(scope))) {
      throw new RuntimeError(
        'VALIDATION',
        'scope must be "sandbox:{id}" or "instance:{id}" (id: letters, digits, . _ : -)',
      );
    }
    if (address !== undefined && (typeof address !== 'string' || !ADDRESS_RE.test(address))) {
      throw unauthorized('address must be a 0x-prefixed 20-byte hex address');
    }
    if (message !== undefined && (typeof message !== 'string' || message.length > 4096)) {
      throw unauthorized('message must be the text of the challenge that was signed');
    }
    const now = this.#nowSec();
    const claimed = resolveSigned(this.#siwe, this.#minter, this.allowLegacyMessage, {
      nonce: input.nonce,
      address: address as string | undefined,
      message: message as string | undefined,
      now,
    });
    const signer = await recoverSigner(claimed.text, signature);
    if (claimed.address !== undefined && signer !== claimed.address) {
      throw unauthorized('signature was not made by the address the message names');
    }
    if (address !== undefined && (address as string).toLowerCase() !== signer) {
      throw unauthorized('signature was not made by the given address');
    }
    // Check and mark in one synchronous step, so two concurrent redemptions cannot both pass.
    if (this.#redeemed.has(claimed.nonce)) throw unauthorized('challenge already used; request a new one');
    this.#redeemed.set(claimed.nonce, claimed.exp);
    await this.#redeemedStore.put(claimed.nonce, { exp: claimed.exp });
    return this.#issue(signer, scope as string | undefined, now);
  }

  async #issue(signer: string, scope: string | undefined, now: number): Promise<Session> {
    if (this.#sessions.size >= this.limits.maxSessions) {
      this.#pruneSessions(now);
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
    if (scope !== undefined) claims.scope = scope;
    const token = await this.#paseto.Encrypt(this.#key, claims, {
      now: new Date(now * 1000),
      expiresIn: this.limits.sessionTtlSec,
    });
    this.#lastAt = Math.max(this.#lastAt + 1, this.#clock());
    const rec = { exp, address: signer, at: this.#lastAt };
    this.#track(jti, rec);
    await this.#sessionStore.put(jti, rec);
    // Over the per-address cap: the address's oldest sessions end.
    const mine = this.#byAddress.get(signer) ?? [];
    while (mine.length > this.limits.maxSessionsPerAddress) {
      const oldest = mine[0]!;
      const r = this.#sessions.get(oldest);
      this.#untrack(oldest);
      if (r && r.exp >= now) {
        this.#revoked.set(oldest, r.exp);
        await this.#revokedStore.put(oldest, { exp: r.exp });
      }
      await this.#sessionStore.del(oldest);
    }
    return { token, address: signer, expires_at: exp };
  }

  #track(jti: string, r: ExpiryRecord): void {
    this.#sessions.set(jti, r);
    if (!r.address) return;
    const list = this.#byAddress.get(r.address);
    if (list) list.push(jti);
    else this.#byAddress.set(r.address, [jti]);
  }

  #untrack(jti: string): void {
    const r = this.#sessions.get(jti);
    this.#sessions.delete(jti);
    if (!r?.address) return;
    const list = this.#byAddress.get(r.address);
    if (!list) return;
    const i = list.indexOf(jti);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#byAddress.delete(r.address);
  }

  #pruneSessions(now: number): number {
    let n = 0;
    for (const [jti, r] of this.#sessions) {
      if (r.exp < now) {
        this.#untrack(jti);
        n++;
      }
    }
    return n;
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
    this.#untrack(claims.jti);
    await this.#revokedStore.put(claims.jti, { exp: claims.exp });
    await this.#sessionStore.del(claims.jti);
    return { revoked: true };
  }

  /**
   * True while the session `jti` names is live: issued here, not revoked (sign-out, or evicted by
   * a newer sign-in), not expired. What a credential derived from a session (a port preview) checks
   * on every use, so it ends with its session.
   */
  isActive(jti: string): boolean {
    if (this.#revoked.has(jti)) return false;
    const r = this.#sessions.get(jti);
    return r !== undefined && r.exp > this.#nowSec();
  }

  /**
   * Drops expired redeemed nonces (`challenges`), sessions and revocations (memory and store).
   * Call every 5 min.
   */
  async collect(): Promise<CollectResult> {
    const now = this.#nowSec();
    const redeemed = this.#pruneMemory(this.#redeemed, now);
    const sessions = this.#pruneSessions(now);
    const revoked = this.#pruneMemory(this.#revoked, now);
    // The store may hold entries this process never loaded (written before a crash), so sweep it.
    const staleSessions = (await this.#sessionStore.entries()).filter(([, r]) => r.exp < now);
    const staleRevoked = (await this.#revokedStore.entries()).filter(([, r]) => r.exp < now);
    const staleRedeemed = (await this.#redeemedStore.entries()).filter(([, r]) => r.exp < now);
    await this.#sessionStore.delMany(staleSessions.map(([id]) => id));
    await this.#revokedStore.delMany(staleRevoked.map(([id]) => id));
    await this.#redeemedStore.delMany(staleRedeemed.map(([id]) => id));
    return {
      challenges: Math.max(redeemed, staleRedeemed.length),
      sessions: Math.max(sessions, staleSessions.length),
      revocations: Math.max(revoked, staleRevoked.length),
    };
  }

  /** Current counts (for metrics and health); `challenges` counts redeemed, unexpired nonces. */
  stats(): { challenges: number; sessions: number; revocations: number } {
    return {
      challenges: this.#redeemed.size,
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
