// Who may speak on the owner channel: the owner's wallet, by an EIP-4361 (SIWE) message that names
// the enclave's attested key and the binding context (which carries the owner). The enclave checks
// the signature itself (viem's SIWE helpers, EOA signatures: the enclave has no chain to ask for
// EIP-1271), so nothing the operator holds can stand in for it. Plus the request framing, the
// freshness window and the replay set of the enclave's end.
import { type Hex, recoverMessageAddress } from 'viem';
import { createSiweMessage, generateSiweNonce, parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { z } from 'zod';
import { parseContext } from './binding.ts';
import { toHex, utf8 } from './bytes.ts';
import { decapsulateRequest, type ResponseSealer } from './channel.ts';
import { AttestationError } from './errors.ts';

/** The SIWE domain of every owner-channel message (the wallet shows it). */
export const CHANNEL_SIWE_DOMAIN = 'tee.agent-sandbox.invalid';
/** A request's `ts` may be this far from the enclave's clock (and its enc is remembered as long). */
export const CHANNEL_WINDOW_MS = 120_000;

const keyUri = (pubkey: Uint8Array) => `urn:agent-sandbox:tee-key:${toHex(pubkey)}`;
const ctxUri = (ctx: string) => `urn:agent-sandbox:tee-context:${ctx}`;

export interface OwnerAuth {
  message: string;
  signature: Hex;
}

/** The message the owner signs once per session (default one hour) to give this enclave orders. */
export function ownerChannelMessage(o: {
  ctx: string;
  pubkey: Uint8Array;
  address: `0x${string}`;
  nowMs?: number;
  ttlMs?: number;
}): string {
  const c = parseContext(o.ctx);
  const now = o.nowMs ?? Date.now();
  return createSiweMessage({
    domain: CHANNEL_SIWE_DOMAIN,
    address: o.address,
    statement: `Send orders to the TEE enclave of sandbox ${c.sandboxId}. Only this enclave key can read them; the operator relays them blind.`,
    uri: keyUri(o.pubkey),
    version: '1',
    chainId: Number(c.chainId),
    nonce: generateSiweNonce(),
    issuedAt: new Date(now),
    expirationTime: new Date(now + (o.ttlMs ?? 3_600_000)),
    resources: [ctxUri(o.ctx)],
  });
}

const owner = (msg: string) => new AttestationError('OWNER', msg);

/** The enclave's check of an owner signature (cached per message, so a session costs one recovery). */
export class OwnerVerifier {
  readonly #owner: string;
  readonly #chainId: number;
  readonly #cache = new Map<string, number>();
  constructor(
    private readonly ctx: string,
    private readonly pubkey: Uint8Array,
  ) {
    const c = parseContext(ctx);
    this.#owner = c.owner;
    this.#chainId = Number(c.chainId);
  }
  async check(auth: OwnerAuth, nowMs = Date.now()): Promise<void> {
    const key = `${auth.signature}\n${auth.message}`;
    const until = this.#cache.get(key);
    if (until !== undefined && until > nowMs) return;
    const m = parseSiweMessage(auth.message);
    const fits =
      m.domain === CHANNEL_SIWE_DOMAIN &&
      m.uri === keyUri(this.pubkey) &&
      m.chainId === this.#chainId &&
      m.version === '1' &&
      (m.resources ?? []).includes(ctxUri(this.ctx)) &&
      m.address?.toLowerCase() === this.#owner &&
      m.expirationTime !== undefined &&
      (m.issuedAt?.getTime() ?? Number.POSITIVE_INFINITY) <= nowMs + CHANNEL_WINDOW_MS &&
      validateSiweMessage({ message: m, domain: CHANNEL_SIWE_DOMAIN, time: new Date(nowMs) });
    if (!fits) {
      throw owner(
        `the request is not signed for this enclave by its owner ${this.#owner} (wrong key, context, chain, owner or an expired session)`,
      );
    }
    let signer: string;
    try {
      signer = await recoverMessageAddress({ message: auth.message, signature: auth.signature });
    } catch {
      throw owner('the owner signature does not verify');
    }
    if (signer.toLowerCase() !== this.#owner)
      throw owner(`signed by ${signer}, not the owner ${this.#owner}`);
    if (this.#cache.size > 1024) this.#cache.clear();
    this.#cache.set(key, m.expirationTime!.getTime());
  }
}

export const ChannelRequestSchema = z
  .object({
    v: z.literal(1),
    ts: z.number().int(),
    auth: z.object({ message: z.string().max(4096), signature: z.string().regex(/^0x[0-9a-fA-F]+$/) }),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    path: z
      .string()
      .regex(/^\/[\x21-\x7e]*$/)
      .max(4096),
    body: z.string().optional(),
  })
  .strict();
export type ChannelRequest = z.infer<typeof ChannelRequestSchema>;

/** The first chunk of every response. */
export interface ChannelResponseHead {
  status: number;
  type: string;
}
export const encodeHead = (h: ChannelResponseHead): Uint8Array => utf8(JSON.stringify(h));

/** The enclave's end: opens a request, refuses stale and replayed ones, checks the owner. */
export class ChannelEndpoint {
  readonly #seen = new Map<string, number>();
  readonly #owner: OwnerVerifier;
  constructor(
    private readonly secretKey: Uint8Array,
    private readonly publicKey: Uint8Array,
    ctx: string,
  ) {
    this.#owner = new OwnerVerifier(ctx, publicKey);
  }

  /** Throws CHANNEL (cannot open: answer in plaintext, nothing else) before a sealer exists. */
  decapsulate(message: Uint8Array) {
    return decapsulateRequest(this.secretKey, this.publicKey, message);
  }

  /** Checks the opened request; throws CHANNEL/OWNER (answer them through `sealer`, encrypted). */
  async accept(
    opened: { plaintext: Uint8Array; enc: Uint8Array },
    nowMs = Date.now(),
  ): Promise<ChannelRequest> {
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(opened.plaintext));
    } catch {
      json = undefined;
    }
    const r = ChannelRequestSchema.safeParse(json);
    if (!r.success) throw new AttestationError('CHANNEL', 'the request inside is not a v1 channel request');
    if (Math.abs(nowMs - r.data.ts) > CHANNEL_WINDOW_MS) {
      throw new AttestationError('CHANNEL', 'the request is stale (or the clocks differ by over 2 minutes)');
    }
    // Entries go in by arrival, so their expiries rise: drop the expired ones from the front and
    // stop at the first live one (the whole set was walked on every request, ~0.1 ms at a few
    // thousand). If the clock stepped back, an expired entry behind a live one stays a while
    // longer: the set only ever errs on refusing more.
    for (const [k, until] of this.#seen) {
      if (until >= nowMs) break;
      this.#seen.delete(k);
    }
    const enc = toHex(opened.enc);
    if (this.#seen.has(enc)) throw new AttestationError('CHANNEL', 'the request was already used (a replay)');
    this.#seen.set(enc, nowMs + 2 * CHANNEL_WINDOW_MS);
    await this.#owner.check(r.data.auth as OwnerAuth, nowMs);
    return r.data;
  }
}

export type { ResponseSealer };
