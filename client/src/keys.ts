// Turns the owner's key material into a viem account: a raw private key (development) or an
// Ethereum V3 keystore JSON file decrypted with a password. Keys never leave this process.
import { readFile } from 'node:fs/promises';
import { isHex, type LocalAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ClientError } from './errors.ts';

export function accountFromPrivateKey(key: string): LocalAccount {
  const hex = key.trim().startsWith('0x') ? key.trim() : `0x${key.trim()}`;
  if (!isHex(hex) || hex.length !== 66) {
    // Never echo the value: it may be a real key with a typo.
    throw new ClientError('USAGE', 'private key must be 32 bytes of hex (64 hex digits, optional 0x)');
  }
  try {
    return privateKeyToAccount(hex as `0x${string}`);
  } catch {
    throw new ClientError('USAGE', 'private key is not a valid secp256k1 key');
  }
}

/** Decrypts a V3 keystore (scrypt or pbkdf2) with `password`; a wrong password is an AUTH error. */
export async function accountFromKeystore(path: string, password: string): Promise<LocalAccount> {
  let json: string;
  try {
    json = await readFile(path, 'utf8');
  } catch (e) {
    throw new ClientError(
      'USAGE',
      `cannot read keystore ${path} (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  // ethers is heavy to load; only keystore users pay for it.
  const { decryptKeystoreJson, isKeystoreJson } = await import('ethers');
  if (!isKeystoreJson(json)) {
    throw new ClientError('USAGE', `${path} is not an Ethereum V3 keystore JSON file`);
  }
  try {
    const { privateKey } = await decryptKeystoreJson(json, password);
    return accountFromPrivateKey(privateKey);
  } catch (e) {
    if (e instanceof ClientError) throw e;
    throw new ClientError('UNAUTHORIZED', `could not decrypt keystore ${path}: wrong password?`, {
      cause: e,
    });
  }
}
