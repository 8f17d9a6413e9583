// Sealed secrets and the key binding, attacked: a replayed body, a tampered one, another
// sandbox's or key's body, and report_data checks against swapped keys, replayed nonces and
// foreign contexts.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bindingReportData, checkBinding, contextString, keyId, onChainNonce } from './binding.ts';
import { generateKeyPair } from './hpke.ts';
import { SealedSecretOpener, sealSecrets } from './sealed.ts';

const OP = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const OWNER = `0x${'0d'.repeat(20)}`;
const ctx = contextString({ chainId: 31337, serviceId: 2, sandboxId: 'sbx-1', operator: OP, owner: OWNER });

describe('sealed secrets (malicious-operator)', () => {
  const kp = generateKeyPair();
  const opener = () => new SealedSecretOpener(kp.secretKey, kp.publicKey, ctx, 'sbx-1');
  it('opens what the client sealed to the bound key', () => {
    const body = sealSecrets(kp.publicKey, ctx, 'sbx-1', { API_KEY: 'sk-123' });
    expect(body.key_id).toBe(keyId(kp.publicKey));
    expect(opener().open(body)).toEqual({ API_KEY: 'sk-123' });
  });
  it('refuses a replayed body, with the same vague error', () => {
    const o = opener();
    const body = sealSecrets(kp.publicKey, ctx, 'sbx-1', { A: '1' });
    o.open(body);
    expect(() => o.open(body)).toThrow('the sealed secrets could not be opened');
  });
  it('refuses an older body delivered after a newer one (a rollback by the operator)', () => {
    const o = opener();
    const older = sealSecrets(kp.publicKey, ctx, 'sbx-1', { API_KEY: 'revoked' }, 1_000);
    const newer = sealSecrets(kp.publicKey, ctx, 'sbx-1', { API_KEY: 'current' }, 2_000);
    expect(o.open(newer)).toEqual({ API_KEY: 'current' });
    expect(() => o.open(older)).toThrow('the sealed secrets could not be opened');
    // The default version is the sealer's clock: two bodies sealed in turn open in turn.
    const a = sealSecrets(kp.publicKey, ctx, 'sbx-1', { A: '1' }, Date.now());
    const b = sealSecrets(kp.publicKey, ctx, 'sbx-1', { A: '2' }, Date.now() + 1);
    const o2 = opener();
    o2.open(a);
    expect(o2.open(b)).toEqual({ A: '2' });
  });
  it('refuses a tampered ciphertext or enc, an unknown key id, another sandbox or context', () => {
    const body = sealSecrets(kp.publicKey, ctx, 'sbx-1', { A: '1' });
    const flipHex = (h: string, i: number) => h.slice(0, i) + (h[i] === '0' ? '1' : '0') + h.slice(i + 1);
    const vague = 'the sealed secrets could not be opened';
    expect(() => opener().open({ ...body, ciphertext: flipHex(body.ciphertext, 4) })).toThrow(vague);
    expect(() => opener().open({ ...body, enc: flipHex(body.enc, 10) })).toThrow(vague);
    expect(() => opener().open({ ...body, key_id: '0'.repeat(16) })).toThrow(vague);
    expect(() => new SealedSecretOpener(kp.secretKey, kp.publicKey, ctx, 'sbx-2').open(body)).toThrow(vague);
    const other = contextString({
      chainId: 31337,
      serviceId: 3,
      sandboxId: 'sbx-1',
      operator: OP,
      owner: OWNER,
    });
    expect(() => new SealedSecretOpener(kp.secretKey, kp.publicKey, other, 'sbx-1').open(body)).toThrow(
      vague,
    );
    expect(() => opener().open({ ...body, extra: 1 })).toThrow(vague);
    expect(() => opener().open('nonsense')).toThrow(vague);
  });
  it('an operator key swapped in cannot open what was sealed to the enclave key', () => {
    const operatorKey = generateKeyPair();
    const body = sealSecrets(kp.publicKey, ctx, 'sbx-1', { A: '1' });
    expect(() =>
      new SealedSecretOpener(operatorKey.secretKey, kp.publicKey, ctx, 'sbx-1').open(body),
    ).toThrow();
  });
});

describe('binding (spec §4)', () => {
  const pk = generateKeyPair().publicKey;
  const nonce = new Uint8Array(randomBytes(32));
  const rd = bindingReportData(ctx, pk, nonce);
  it('accepts the exact (ctx, pubkey, nonce)', () => {
    expect(rd).toHaveLength(64);
    expect(() => checkBinding(rd, ctx, pk, nonce)).not.toThrow();
  });
  it('refuses a swapped key, a replayed nonce, another service, sandbox, operator or owner', () => {
    expect(() => checkBinding(rd, ctx, generateKeyPair().publicKey, nonce)).toThrow(/do not use this key/);
    expect(() => checkBinding(rd, ctx, pk, new Uint8Array(randomBytes(32)))).toThrow(/do not use this key/);
    for (const c of [
      { chainId: 31337, serviceId: 3, sandboxId: 'sbx-1', operator: OP, owner: OWNER },
      { chainId: 31337, serviceId: 2, sandboxId: 'sbx-2', operator: OP, owner: OWNER },
      { chainId: 31337, serviceId: 2, sandboxId: 'sbx-1', operator: `0x${'11'.repeat(20)}`, owner: OWNER },
      { chainId: 1, serviceId: 2, sandboxId: 'sbx-1', operator: OP, owner: OWNER },
      // The same enclave ordered by another wallet: a swapped owner does not bind either.
      { chainId: 31337, serviceId: 2, sandboxId: 'sbx-1', operator: OP, owner: `0x${'0e'.repeat(20)}` },
    ]) {
      expect(() => checkBinding(rd, contextString(c), pk, nonce)).toThrow(/do not use this key/);
    }
  });
  it('the context is lowercase and refuses ":" in a sandbox id (no context forgery)', () => {
    expect(ctx).toBe(`31337:2:sbx-1:${OP.toLowerCase()}:${OWNER}`);
    expect(() =>
      contextString({ chainId: 1, serviceId: 2, sandboxId: 'a:b', operator: OP, owner: OWNER }),
    ).toThrow();
  });
  it('the on-chain nonce is keccak256(abi.encode(chainId, serviceId, operator))', () => {
    // cast keccak $(cast abi-encode 'f(uint256,uint64,address)' 31337 2 0x7099…79C8)
    expect(Buffer.from(onChainNonce(31337, 2, OP)).toString('hex')).toBe(
      '19fd600745baec830ae95754d95da085ea641812be57efc993de9a761a561e33',
    );
    expect(onChainNonce(31337, 2, OP)).not.toEqual(onChainNonce(31337, 3, OP));
  });
});
