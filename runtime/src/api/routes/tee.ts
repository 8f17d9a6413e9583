// TEE routes (tee-instance mode): attestation (with a caller nonce), the enclave's public key, and
// secrets sealed to it. The TEE backend itself lives elsewhere (no TEE hardware here).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { ApiEnv } from '../context.ts';
import type { ApiTee } from '../deps.ts';
import { errors, json, jsonBody, PassThroughSchema, SANDBOX_ERRORS } from '../schemas.ts';

const E = errors(400, ...SANDBOX_ERRORS, 502, 503);

const attestationRoute = createRoute({
  method: 'get',
  path: '/tee/attestation',
  tags: ['tee'],
  summary: 'Attestation document, bound to an optional caller nonce',
  security: [{ bearer: [] }],
  request: {
    query: z.object({
      nonce: z
        .string()
        .regex(/^[0-9a-fA-F]{16,128}$/)
        .optional(),
    }),
  },
  responses: { 200: json(PassThroughSchema, 'Attestation'), ...E },
});

const publicKeyRoute = createRoute({
  method: 'get',
  path: '/tee/public-key',
  tags: ['tee'],
  summary: "The enclave's public key for sealing secrets",
  security: [{ bearer: [] }],
  responses: { 200: json(PassThroughSchema, 'Public key'), ...E },
});

const SealedSchema = z
  .object({ sealed: z.string().min(1).max(2_000_000), algorithm: z.string().max(64).optional() })
  .openapi('SealedSecrets');

const sealedRoute = createRoute({
  method: 'post',
  path: '/tee/sealed-secrets',
  tags: ['tee'],
  summary: 'Secrets encrypted by the client to the enclave key',
  security: [{ bearer: [] }],
  request: { body: jsonBody(SealedSchema) },
  responses: { 200: json(PassThroughSchema, 'Accepted'), ...E },
});

const asObject = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' ? { ...(v as Record<string, unknown>) } : { value: v };

export function registerTee(app: OpenAPIHono<ApiEnv>, tee: ApiTee): void {
  app.openapi(attestationRoute, async (c) =>
    c.json(asObject(await tee.attestation(c.get('sandbox').id, c.req.valid('query').nonce)), 200),
  );
  app.openapi(publicKeyRoute, async (c) => c.json(asObject(await tee.publicKey(c.get('sandbox').id)), 200));
  app.openapi(sealedRoute, async (c) =>
    c.json(asObject(await tee.sealedSecrets(c.get('sandbox').id, c.req.valid('json'))), 200),
  );
}
