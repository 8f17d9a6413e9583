// Owner keys: raw hex (dev) and V3 keystores; errors never echo key material.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encryptKeystoreJson } from 'ethers';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode, isClientError } from './errors.ts';
import { accountFromKeystore, accountFromPrivateKey } from './keys.ts';

const dir = mkdtempSync(join(tmpdir(), 'client-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('accountFromPrivateKey', () => {
  it('accepts 64 hex digits with or without 0x', () => {
    const pk = generatePrivateKey();
    const want = privateKeyToAccount(pk).address;
    expect(accountFromPrivateKey(pk).address).toBe(want);
    expect(accountFromPrivateKey(pk.slice(2)).address).toBe(want);
  });

  it('refuses malformed keys without echoing them', () => {
    const bad = `${generatePrivateKey().slice(0, -2)}zz`;
    const err = (() => {
      try {
        accountFromPrivateKey(bad);
      } catch (e) {
        return e;
      }
    })();
    expect(isClientError(err, 'USAGE')).toBe(true);
    expect((err as Error).message).not.toContain(bad.slice(2, 20));
  });
});

describe('accountFromKeystore', () => {
  it('decrypts a V3 keystore; a wrong password is an auth error (exit 2)', async () => {
    const pk = generatePrivateKey();
    const address = privateKeyToAccount(pk).address;
    // Light scrypt parameters keep the test quick; the format is the standard one.
    const json = await encryptKeystoreJson({ address, privateKey: pk }, 'correct horse', {
      scrypt: { N: 1024 },
    });
    const path = join(dir, 'owner.json');
    writeFileSync(path, json);
    expect((await accountFromKeystore(path, 'correct horse')).address).toBe(address);
    const err = await accountFromKeystore(path, 'wrong').catch((e) => e);
    expect(isClientError(err, 'UNAUTHORIZED')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.AUTH);
  });

  it('a missing or non-keystore file is a usage error', async () => {
    await expect(accountFromKeystore(join(dir, 'none.json'), 'x')).rejects.toThrow(/cannot read keystore/);
    writeFileSync(join(dir, 'plain.json'), '{"hello":1}');
    await expect(accountFromKeystore(join(dir, 'plain.json'), 'x')).rejects.toThrow(
      /not an Ethereum V3 keystore/,
    );
  });
});
