// The browser's primitives (web.ts, in the console's bundle) give the same bytes as node's
// (node.ts, which RFC 9180's vectors check through hpke.test.ts): RFC 7748 §6.1 for X25519,
// RFC 4231 case 2 for HMAC-SHA256, and agreement on random keys; a low-order peer key is refused.
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../bytes.ts';
import * as node from './node.ts';
import * as web from './web.ts';

const ALICE_SK = fromHex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a');
const ALICE_PK = '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a';
const BOB_PK = fromHex('de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
const SHARED = '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742';

describe('#platform: web (browser) and node primitives agree', () => {
  for (const [name, p] of [
    ['node', node],
    ['web', web],
  ] as const) {
    it(`${name}: RFC 7748 X25519 and RFC 4231 HMAC-SHA256`, () => {
      expect(toHex(p.x25519PublicKey(ALICE_SK.slice()))).toBe(ALICE_PK);
      expect(toHex(p.x25519(ALICE_SK.slice(), BOB_PK))).toBe(SHARED);
      const mac = p.hmacSha256(
        new TextEncoder().encode('Jefe'),
        new TextEncoder().encode('what do ya want '),
        new TextEncoder().encode('for nothing?'),
      );
      expect(toHex(mac)).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
      expect(p.randomBytes(32)).toHaveLength(32);
      expect(() => p.x25519(ALICE_SK.slice(), new Uint8Array(32))).toThrow();
    });
  }

  it('a key pair from either side agrees with the other', () => {
    const a = web.x25519Generate();
    const b = node.x25519Generate();
    expect(toHex(node.x25519PublicKey(a.secretKey.slice()))).toBe(toHex(a.publicKey));
    expect(toHex(web.x25519PublicKey(b.secretKey))).toBe(toHex(b.publicKey));
    expect(toHex(web.x25519(a.secretKey, b.publicKey))).toBe(toHex(node.x25519(b.secretKey, a.publicKey)));
  });
});
