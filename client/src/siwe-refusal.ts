// The check before the CLI signs an operator's sign-in message (EIP-4361, viem's parser). Its own
// module, imported by the sign-in alone: a command run on a cached session never loads viem.
import { createSiweMessage, parseSiweMessage, type SiweMessage } from 'viem/siwe';

/**
 * Why a sign-in message must not be signed for the operator at `baseUrl`, or undefined when it is
 * a well-formed EIP-4361 message naming that operator (domain = its host, URI = its origin), this
 * wallet, the challenge's nonce and (when given) the chain, and not yet expired. A message naming
 * another operator is what a relaying operator would show: signing it would sign in there as us.
 */
export function siweRefusal(
  message: string,
  expect: { baseUrl: string; address: string; nonce: string; chainId?: number; now?: Date },
): string | undefined {
  const m = parseSiweMessage(message);
  const base = new URL(expect.baseUrl);
  if (!m.domain || !m.uri || !m.address || !m.nonce || m.chainId === undefined || m.version !== '1') {
    return 'it is not an EIP-4361 sign-in message';
  }
  // Only what the standard fields say may be signed: re-rendering must give back the same text.
  if (createSiweMessage(m as SiweMessage) !== message) return 'it carries text outside the EIP-4361 fields';
  if (m.domain !== base.host) return `it names ${m.domain}, not ${base.host}`;
  let uri: URL;
  try {
    uri = new URL(m.uri);
  } catch {
    return 'its URI is not a URL';
  }
  if (uri.origin !== base.origin) return `its URI is ${uri.origin}, not ${base.origin}`;
  if (m.address.toLowerCase() !== expect.address.toLowerCase()) return `it names the wallet ${m.address}`;
  if (m.nonce !== expect.nonce) return 'its nonce is not the challenge nonce';
  if (expect.chainId !== undefined && m.chainId !== expect.chainId) {
    return `it names chain ${m.chainId}, not ${expect.chainId}`;
  }
  const now = expect.now ?? new Date();
  if (!m.expirationTime || m.expirationTime <= now) return 'it has expired or never expires';
  if (m.notBefore && m.notBefore > now) return 'it is not valid yet';
  return undefined;
}
