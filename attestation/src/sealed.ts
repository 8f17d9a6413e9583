// Sealed secrets (spec tee.md §5): `{"env":{K:V}}` encrypted with HPKE base mode to the enclave's
// bound X25519 key; info = domain ‖ ctx, aad = key_id ‖ sandboxId. The plaintext carries a
// monotonic `version` (the sealer's clock in ms by default): the opener keeps the highest it has
// opened and refuses any body not above it, so an operator holding back an older body cannot roll
// the secrets back by delivering it late; it also keeps the `enc` values it has seen (a replay).
// Every failure says the same thing.
import { z } from 'zod';
import { keyId } from './binding.ts';
import { concatBytes, fromHex, toHex, utf8 } from './bytes.ts';
import { AttestationError } from './errors.ts';
import { setupBaseR, setupBaseS } from './hpke.ts';

export const SEALED_ALGORITHM = 'hpke-x25519-sha256-chacha20poly1305';
export const SEALED_INFO_DOMAIN = 'tangle-sandbox-sealed-secrets/v1';
const MAX_CIPHERTEXT_HEX = 2 * 256 * 1024;

export const SealedBodySchema = z
  .object({
    v: z.literal(1),
    algorithm: z.literal(SEALED_ALGORITHM),
    key_id: z.string().regex(/^[0-9a-f]{16}$/),
    enc: z.string().regex(/^[0-9a-f]{64}$/),
    ciphertext: z
      .string()
      .regex(/^([0-9a-f]{2})+$/)
      .max(MAX_CIPHERTEXT_HEX),
  })
  .strict();
export type SealedBody = z.infer<typeof SealedBodySchema>;

const info = (ctx: string) => concatBytes(utf8(SEALED_INFO_DOMAIN), utf8(ctx));
const aad = (kid: string, sandboxId: string) => concatBytes(utf8(kid), utf8(sandboxId));

export function sealSecrets(
  pubkey: Uint8Array,
  ctx: string,
  sandboxId: string,
  env: Record<string, string>,
  version: number = Date.now(),
): SealedBody {
  const kid = keyId(pubkey);
  const { enc, ctx: hpke } = setupBaseS(pubkey, info(ctx));
  const ct = hpke.seal(0, aad(kid, sandboxId), utf8(JSON.stringify({ env, version })));
  return { v: 1, algorithm: SEALED_ALGORITHM, key_id: kid, enc: toHex(enc), ciphertext: toHex(ct) };
}

/** The TEE side: one sealing key pair and the `enc` values already used with it. */
export class SealedSecretOpener {
  private readonly seen = new Set<string>();
  /** The highest version opened so far: only a newer body opens. */
  private highest = 0;
  readonly keyId: string;
  constructor(
    private readonly secretKey: Uint8Array,
    readonly publicKey: Uint8Array,
    private readonly ctx: string,
    private readonly sandboxId: string,
  ) {
    this.keyId = keyId(publicKey);
  }

  /** The env inside, or SEALED (deliberately without detail) for any failure, including a replay. */
  open(body: unknown): Record<string, string> {
    const vague = () => new AttestationError('SEALED', 'the sealed secrets could not be opened');
    const b = SealedBodySchema.safeParse(body);
    if (!b.success || b.data.key_id !== this.keyId || this.seen.has(b.data.enc)) throw vague();
    let plain: Uint8Array;
    try {
      const { ctx } = setupBaseR(fromHex(b.data.enc), this.secretKey, info(this.ctx));
      plain = ctx.open(0, aad(this.keyId, this.sandboxId), fromHex(b.data.ciphertext));
    } catch {
      throw vague();
    }
    this.seen.add(b.data.enc);
    const parsed = z
      .object({ env: z.record(z.string(), z.string()), version: z.number().int().positive() })
      .strict()
      .safeParse(safeJson(new TextDecoder().decode(plain)));
    if (!parsed.success || parsed.data.version <= this.highest) throw vague();
    this.highest = parsed.data.version;
    return parsed.data.env;
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
