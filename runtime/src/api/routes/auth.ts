// Wallet sign-in: EIP-191 challenge → PASETO session, and sign-out (revocation).
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { isRuntimeError, RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSessions } from '../deps.ts';
import { bearerToken } from '../middleware/session.ts';
import type { SessionCache } from '../middleware/session-cache.ts';
import {
  ChallengeSchema,
  errors,
  json,
  jsonBody,
  RevokedSchema,
  SessionRequestSchema,
  SessionSchema,
} from '../schemas.ts';
import { describeIssues } from './validation.ts';

const challengeRoute = createRoute({
  method: 'post',
  path: '/api/auth/challenge',
  tags: ['auth'],
  summary: 'Get a sign-in challenge (EIP-191 message to sign, valid 300 s, single use)',
  responses: { 200: json(ChallengeSchema, 'The challenge'), ...errors(429, 503) },
});

const sessionRoute = createRoute({
  method: 'post',
  path: '/api/auth/session',
  tags: ['auth'],
  summary: 'Exchange a signed challenge for a session token (PASETO v4.local, 1 h)',
  request: { body: jsonBody(SessionRequestSchema) },
  responses: { 200: json(SessionSchema, 'The session'), ...errors(400, 401, 429, 503) },
});

const revokeRoute = createRoute({
  method: 'delete',
  path: '/api/auth/session',
  tags: ['auth'],
  summary: 'Revoke the bearer session token',
  security: [{ bearer: [] }],
  responses: { 200: json(RevokedSchema, 'Revoked'), ...errors(401, 429) },
});

const signInFailed = () =>
  new RuntimeError('UNAUTHORIZED', 'sign-in failed: request a new challenge and sign it with your wallet');

export function authRoutes(sessions: ApiSessions, cache: SessionCache): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>();

  app.openapi(challengeRoute, async (c) => {
    const ch = await sessions.createChallenge();
    return c.json({ nonce: ch.nonce, message: ch.message, expires_at: ch.expires_at }, 200);
  });

  app.openapi(
    sessionRoute,
    async (c) => {
      const body = c.req.valid('json');
      try {
        const s = await sessions.createSession(body);
        return c.json({ token: s.token, address: s.address.toLowerCase(), expires_at: s.expires_at }, 200);
      } catch (e) {
        // Capacity is the operator's problem and worth retrying; every other failure is a 401.
        if (isRuntimeError(e, 'CAPACITY_EXHAUSTED')) throw e;
        c.get('log').info({ reason: e instanceof Error ? e.message : 'invalid' }, 'sign-in refused');
        throw signInFailed();
      }
    },
    (result) => {
      // Spec: any sign-in failure is a 401 (a body that is not JSON at all stays a 400).
      if (!result.success) {
        const issues = (result.error as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues;
        throw new RuntimeError('UNAUTHORIZED', `sign-in failed: ${describeIssues(issues)}`);
      }
      return undefined;
    },
  );

  app.openapi(revokeRoute, async (c) => {
    const token = bearerToken(c.req.header('authorization'));
    if (!token)
      throw new RuntimeError('UNAUTHORIZED', 'send Authorization: Bearer <session token> to revoke it');
    try {
      await cache.verify(token);
    } catch {
      throw new RuntimeError('UNAUTHORIZED', 'session invalid or expired');
    }
    await cache.revoke(token);
    return c.json({ revoked: true as const }, 200);
  });

  return app;
}
