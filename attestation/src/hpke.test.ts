// HPKE against RFC 9180 Appendix A.2.1 (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
// ChaCha20Poly1305, base mode). Vector data copied from the RFC's source, the CFRG draft
// repository cfrg/draft-irtf-cfrg-hpke @b1f7cb0, draft-irtf-cfrg-hpke.md, section
// "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20Poly1305" (identical to RFC 9180 A.2.1).
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from './bytes.ts';
import { deriveKeyPair, setupBaseR, setupBaseS } from './hpke.ts';

const A21 = {
  info: '4f6465206f6e2061204772656369616e2055726e',
  ikmE: '909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b',
  pkEm: '1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a',
  skEm: 'f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600',
  ikmR: '1ac01f181fdf9f352797655161c58b75c656a6cc2716dcb66372da835542e1df',
  pkRm: '4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a',
  skRm: '8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb',
  enc: '1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a',
  shared_secret: '0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7',
  key: 'ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91',
  base_nonce: '5c4d98150661b848853b547f',
  exporter_secret: 'a3b010d4994890e2c6968a36f64470d3c824c8f5029942feb11e7a74b2921922',
  pt: '4265617574792069732074727574682c20747275746820626561757479',
  encryptions: [
    {
      seq: 0,
      aad: '436f756e742d30',
      nonce: '5c4d98150661b848853b547f',
      ct: '1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28',
    },
    {
      seq: 1,
      aad: '436f756e742d31',
      nonce: '5c4d98150661b848853b547e',
      ct: '6b53c051e4199c518de79594e1c4ab18b96f081549d45ce015be002090bb119e85285337cc95ba5f59992dc98c',
    },
    {
      seq: 2,
      aad: '436f756e742d32',
      nonce: '5c4d98150661b848853b547d',
      ct: '71146bd6795ccc9c49ce25dda112a48f202ad220559502cef1f34271e0cb4b02b4f10ecac6f48c32f878fae86b',
    },
    {
      seq: 4,
      aad: '436f756e742d34',
      nonce: '5c4d98150661b848853b547b',
      ct: '63357a2aa291f5a4e5f27db6baa2af8cf77427c7c1a909e0b37214dd47db122bb153495ff0b02e9e54a50dbe16',
    },
    {
      seq: 255,
      aad: '436f756e742d323535',
      nonce: '5c4d98150661b848853b5480',
      ct: '18ab939d63ddec9f6ac2b60d61d36a7375d2070c9b683861110757062c52b8880a5f6b3936da9cd6c23ef2a95c',
    },
    {
      seq: 256,
      aad: '436f756e742d323536',
      nonce: '5c4d98150661b848853b557f',
      ct: '7a4a13e9ef23978e2c520fd4d2e757514ae160cd0cd05e556ef692370ca53076214c0c40d4c728d6ed9e727a5b',
    },
  ],
};

describe('HPKE base mode, RFC 9180 A.2.1', () => {
  it('derives both key pairs from their ikm', () => {
    const e = deriveKeyPair(fromHex(A21.ikmE));
    const r = deriveKeyPair(fromHex(A21.ikmR));
    expect(toHex(e.secretKey)).toBe(A21.skEm);
    expect(toHex(e.publicKey)).toBe(A21.pkEm);
    expect(toHex(r.secretKey)).toBe(A21.skRm);
    expect(toHex(r.publicKey)).toBe(A21.pkRm);
  });
  it('sender: enc, shared secret, key schedule and every ciphertext match', () => {
    const eph = { secretKey: fromHex(A21.skEm), publicKey: fromHex(A21.pkEm) };
    const s = setupBaseS(fromHex(A21.pkRm), fromHex(A21.info), eph);
    expect(toHex(s.enc)).toBe(A21.enc);
    expect(toHex(s.sharedSecret)).toBe(A21.shared_secret);
    expect(toHex(s.ctx.key)).toBe(A21.key);
    expect(toHex(s.ctx.baseNonce)).toBe(A21.base_nonce);
    expect(toHex(s.ctx.exporterSecret)).toBe(A21.exporter_secret);
    for (const v of A21.encryptions) {
      expect(toHex(s.ctx.nonce(v.seq))).toBe(v.nonce);
      expect(toHex(s.ctx.seal(v.seq, fromHex(v.aad), fromHex(A21.pt)))).toBe(v.ct);
    }
  });
  it('receiver: opens every ciphertext, and refuses a flipped byte or the wrong aad', () => {
    const r = setupBaseR(fromHex(A21.enc), fromHex(A21.skRm), fromHex(A21.info));
    expect(toHex(r.sharedSecret)).toBe(A21.shared_secret);
    for (const v of A21.encryptions) {
      expect(toHex(r.ctx.open(v.seq, fromHex(v.aad), fromHex(v.ct)))).toBe(A21.pt);
    }
    const ct = fromHex(A21.encryptions[0]!.ct);
    ct[3]! ^= 1;
    expect(() => r.ctx.open(0, fromHex(A21.encryptions[0]!.aad), ct)).toThrow();
    expect(() => r.ctx.open(0, fromHex(A21.encryptions[1]!.aad), fromHex(A21.encryptions[0]!.ct))).toThrow();
  });
  it('exports the secrets of A.2.1.3 (the channel keys its responses with Export)', () => {
    const r = setupBaseR(fromHex(A21.enc), fromHex(A21.skRm), fromHex(A21.info));
    expect(toHex(r.ctx.export(new Uint8Array(0), 32))).toBe(
      '4bbd6243b8bb54cec311fac9df81841b6fd61f56538a775e7c80a9f40160606e',
    );
    expect(toHex(r.ctx.export(new Uint8Array([0]), 32))).toBe(
      '8c1df14732580e5501b00f82b10a1647b40713191b7c1240ac80e2b68808ba69',
    );
    expect(toHex(r.ctx.export(fromHex('54657374436f6e74657874'), 32))).toBe(
      '5acb09211139c43b3090489a9da433e8a30ee7188ba8b0a9a1ccf0c229283e53',
    );
  });
});
