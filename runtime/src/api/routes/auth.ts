// Wallet sign-in: EIP-4361 challenge (signed per EIP-191) → PASETO session, the seeds' front ends'
// `POST /api/auth/verify` alias, and sign-out (revocation).
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { isRuntimeError, RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import type { ApiSessions } from '../deps.ts';
import { bearerToken } from '../middleware/session.ts';
import type { SessionCache } from '../middleware/session-cache.ts';
import {
  ChallengeRequestSchema,
  ChallengeSchema,
  errors,
  json,
  jsonBody,
  RevokedSchema,
  SessionRequestSchema,
  SessionSchema,
  VerifyRequestSchema,
} from '../schemas.ts';
import { describeIssues } from './validation.ts';

const challengeRoute = createRoute({
  method: 'post',
  path: '/api/auth/challenge',
  tags: ['auth'],
  summary:
    'Get a sign-in challenge: an EIP-4361 message naming this operator and `address` (valid 300 s, single use)',
  request: { body: { ...jsonBody(ChallengeRequestSchema), required: false } },
  responses: { 200: json(ChallengeSchema, 'The challenge'), ...errors(400, 429, 503) },
});

const sessionRoute = createRoute({
  method: 'post',
  path: '/api/auth/session',
  tags: ['auth'],
  summary: 'Exchange a signed challenge for a session token (PASETO v4.local, 1 h)',
  request: { body: jsonBody(SessionRequestSchema) },
  responses: { 200: json(SessionSchema, 'The session'), ...errors(400, 401, 429, 503) },
});

const verifyRoute = createRoute({
  method: 'post',
  path: '/api/auth/verify',
  tags: ['auth'],
  summary: 'Alias of POST /api/auth/session for front ends that send `{signature, challenge}` (same checks)',
  request: { body: jsonBody(VerifyRequestSchema) },
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

  // The body is optional (older front ends post none), so it is read here rather than validated
  // by the route: no body or `{}` asks for the legacy message.
  app.openapi(challengeRoute, async (c) => {
    const text = await c.req.text();
    let raw: unknown = {};
    if (text.trim() !== '') {
      try {
        raw = JSON.parse(text);
      } catch {
        throw new RuntimeError('VALIDATION', 'body must be JSON: {"address":"0x…"}');
      }
    }
    const body = ChallengeRequestSchema.safeParse(raw);
    if (!body.success) throw new RuntimeError('VALIDATION', describeIssues(body.error.issues));
    const ch = await sessions.createChallenge(body.data);
    return c.json(
      {
        nonce: ch.nonce,
        message: ch.message,
        challenge: ch.message,
        issued_at: ch.issued_at,
        expires_at: ch.expires_at,
      },
      200,
    );
  });

  const redeem = async (c: Context<ApiEnv>, input: Parameters<ApiSessions['createSession']>[0]) => {
    try {
      const s = await sessions.createSession(input);
      return { token: s.token, address: s.address.toLowerCase(), expires_at: s.expires_at };
    } catch (e) {
      // Capacity is the operator's problem and worth retrying; every other failure is a 401.
      if (isRuntimeError(e, 'CAPACITY_EXHAUSTED')) throw e;
      c.get('log').info({ reason: e instanceof Error ? e.message : 'invalid' }, 'sign-in refused');
      throw signInFailed();
    }
  };
  // Spec: any sign-in failure is a 401 (a body that is not JSON at all stays a 400).
  const as401 = (result: { success: boolean; error?: unknown }) => {
    if (!result.success) {
      const issues = (result.error as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues;
      throw new RuntimeError('UNAUTHORIZED', `sign-in failed: ${describeIssues(issues)}`);
    }
    return undefined;
  };

  app.openapi(sessionRoute, async (c) => c.json(await redeem(c, c.req.valid('json')), 200), as401);

  app.openapi(
    verifyRoute,
    async (c) => {
      const { challenge, ...rest } = c.req.valid('json');
      return c.json(await redeem(c, { ...rest, message: challenge }), 200);
    },
    as401,
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
