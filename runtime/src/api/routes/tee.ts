// TEE routes (tee-instance mode): evidence over the caller's fresh nonce, the bound sealing key,
// and secrets sealed to it (spec tee.md §5). The TEE side is runtime/src/tee (TeeService).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { ApiEnv } from '../context.ts';
import type { ApiTee } from '../deps.ts';
import { assertOwner } from '../middleware/session.ts';
import { errors, json, jsonBody, PassThroughSchema, SANDBOX_ERRORS } from '../schemas.ts';

const E = errors(400, ...SANDBOX_ERRORS, 409, 502, 503);

const NonceQuery = z.object({
  nonce: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'nonce: 32 random bytes as 64 hex digits')
    .openapi({ description: '32 random bytes (hex) of your own; the evidence is bound to it' }),
});

const attestationRoute = createRoute({
  method: 'get',
  path: '/tee/attestation',
  tags: ['tee'],
  summary: 'Attestation document, bound to an optional caller nonce',
  security: [{ bearer: [] }],
  request: {
    query: NonceQuery,
  },
  responses: { 200: json(PassThroughSchema, 'Attestation'), ...E },
});

const publicKeyRoute = createRoute({
  method: 'get',
  path: '/tee/public-key',
  tags: ['tee'],
  summary: "The enclave's sealing key, with evidence binding it to the caller's nonce",
  security: [{ bearer: [] }],
  request: { query: NonceQuery },
  responses: { 200: json(PassThroughSchema, 'Public key'), ...E },
});

// Shape only; the TEE side checks everything else and answers success:false without detail.
const SealedSchema = z
  .object({
    v: z.literal(1),
    algorithm: z.string().max(64),
    key_id: z.string().max(64),
    enc: z.string().max(128),
    ciphertext: z.string().min(2).max(600_000),
  })
  .openapi('SealedSecrets');

const sealedRoute = createRoute({
  method: 'post',
  path: '/tee/sealed-secrets',
  tags: ['tee'],
  summary: 'Refused (409) on both backends: send sealed secrets inside the owner channel',
  description:
    "Anyone may seal to the public key, so a body this API delivered could be the operator's own env; the enclave takes sealed secrets from its owner only, as `POST /tee/sealed-secrets` inside `…/tee/channel`.",
  security: [{ bearer: [] }],
  request: { body: jsonBody(SealedSchema) },
  responses: { 200: json(PassThroughSchema, 'Accepted'), ...E },
});

const channelRoute = createRoute({
  method: 'post',
  path: '/tee/channel',
  tags: ['tee'],
  summary:
    "The owner's end-to-end channel into the enclave (relayed blind to a CVM, or ended in this measured program on direct)",
  description:
    'An Oblivious-HTTP-shaped message (RFC 9458 encapsulation, our JSON framing inside) encrypted to the ' +
    "enclave's attested key and signed inside by the owner (EIP-4361). The answer is a chunked, sealed " +
    'stream only the sender opens. See attestation/README.md.',
  security: [{ bearer: [] }],
  request: {
    body: {
      required: true,
      content: { 'message/ohttp-req': { schema: z.string().openapi({ format: 'binary' }) } },
    },
  },
  responses: {
    200: {
      description: 'The sealed response stream',
      content: { 'message/ohttp-chunked-res': { schema: z.string().openapi({ format: 'binary' }) } },
    },
    ...E,
  },
});

/** An owner-channel message is small (one request; big files go in several). */
const MAX_CHANNEL_BYTES = 48 * 1024 * 1024;

const asObject = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' ? { ...(v as Record<string, unknown>) } : { value: v };

export function registerTee(app: OpenAPIHono<ApiEnv>, tee: ApiTee): void {
  app.openapi(attestationRoute, async (c) =>
    c.json(asObject(await tee.attestation(c.get('sandbox').id, c.req.valid('query').nonce)), 200),
  );
  app.openapi(publicKeyRoute, async (c) =>
    c.json(asObject(await tee.publicKey(c.get('sandbox').id, c.req.valid('query').nonce)), 200),
  );
  app.openapi(sealedRoute, async (c) => {
    assertOwner(c, 'set secrets');
    return c.json(asObject(await tee.sealedSecrets(c.get('sandbox').id, c.req.valid('json'))), 200);
  });
  // Bytes in, bytes out: nothing here can read either (no body validation beyond the size).
  app.openapi(channelRoute, async (c) => {
    assertOwner(c, 'use the owner channel');
    const message = new Uint8Array(await c.req.arrayBuffer());
    if (message.length === 0 || message.length > MAX_CHANNEL_BYTES) {
      return c.json(
        {
          success: false,
          error: { code: 'VALIDATION', message: 'an owner-channel message is 1 byte to 48 MiB' },
        },
        400,
      );
    }
    const up = await tee.channel(c.get('sandbox').id, message);
    return new Response(up.body, {
      status: up.status,
      headers: {
        'content-type': up.headers.get('content-type') ?? 'application/json',
        'cache-control': 'no-store',
      },
    }) as never;
  });
}
