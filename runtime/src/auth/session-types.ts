// The session-auth vocabulary: key-derivation labels, limits, the shapes handed to callers
// (challenge, session, claims) and the token/record schemas SessionAuth checks.

import { z } from 'zod';
import type { EncryptedStore } from '../store/index.ts';
import { legacyMessage, type SiweBinding } from './challenge.ts';
import { SCOPE_RE } from './scope.ts';

export const PASETO_KEY_SALT = 'tangle-sandbox-blueprint-paseto-v4';
export const PASETO_KEY_INFO = 'session-auth-symmetric-key-v1';

export const MAX_TOKEN_LEN = 4096;
export const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
export const CHALLENGE_MAC_INFO = 'sign-in-challenge-mac-v1';

export interface SessionAuthLimits {
  challengeTtlSec: number;
  sessionTtlSec: number;
  maxSessions: number;
  maxSessionsPerAddress: number;
}

export const DEFAULT_SESSION_LIMITS: SessionAuthLimits = {
  challengeTtlSec: 300,
  sessionTtlSec: 3600,
  maxSessions: 50_000,
  maxSessionsPerAddress: 20,
};

export interface SessionAuthOptions {
  /** SESSION_AUTH_SECRET, 64 hex chars. */
  secret: string;
  /** Where revocations and the session index persist. */
  store: EncryptedStore;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  limits?: Partial<SessionAuthLimits>;
  /** The operator's public URL and chain id that sign-in messages name (EIP-4361). */
  siwe: SiweBinding;
  /**
   * AUTH_ALLOW_LEGACY_MESSAGE: also hand out and accept the old plain message, which names no
   * operator (a signature over it can be relayed to another operator). Off by default.
   */
  allowLegacyMessage?: boolean;
}

export interface Challenge {
  nonce: string;
  /** The text to sign with personal_sign. */
  message: string;
  /** The same text, under the name older front ends read. */
  challenge: string;
  /** Unix seconds. */
  issued_at: number;
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

export const TokenClaims = z.object({
  address: z.string().regex(/^0x[0-9a-f]{40}$/),
  scope: z.string().regex(SCOPE_RE).optional(),
  iat: z.string(),
  exp: z.string(),
  jti: z.string().regex(/^[0-9a-f]{32}$/),
});

// `at`: issue order (ms, strictly increasing), so the per-address cap ends the oldest after a restart.
export const ExpiryRecord = z.object({
  exp: z.number(),
  address: z.string().optional(),
  at: z.number().optional(),
});
export type ExpiryRecord = z.infer<typeof ExpiryRecord>;

/** The pre-EIP-4361 message (legacy switch only). */
export const challengeMessage = legacyMessage;
