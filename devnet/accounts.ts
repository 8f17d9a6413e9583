// The devnet's named accounts: anvil's well-known dev keys (public test keys, never real funds).
import { type Hex, toHex } from 'viem';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';

/**
 * The mnemonic anvil derives its dev accounts from by default. It is public and printed by every
 * Foundry install, so the keys below are safe to write to disk for a local chain and worthless
 * anywhere else. We pass it to anvil explicitly so the derivation here and anvil's always agree.
 */
export const DEVNET_MNEMONIC = 'test test test test test test test test test test test junk';

export type DevnetRole = 'deployer' | 'operator1' | 'operator2' | 'serviceOwner' | 'user';

export interface DevnetAccount {
  address: Hex;
  privateKey: Hex;
  role: string;
}

/** Which anvil index plays which role, and what the role means (written to devnet.json). */
const ROLES: ReadonlyArray<{ role: DevnetRole; index: number; description: string }> = [
  { role: 'deployer', index: 0, description: 'deployed the contracts; owns the four blueprints' },
  { role: 'operator1', index: 1, description: 'operator on every blueprint and service (capacity 100)' },
  { role: 'operator2', index: 2, description: 'operator on every blueprint and service (capacity 50)' },
  { role: 'serviceOwner', index: 3, description: 'requested and owns the four services; permitted caller' },
  { role: 'user', index: 4, description: 'permitted caller on every service (a second user)' },
];

/** Derives the named accounts from the dev mnemonic (same keys as anvil's accounts 0..4). */
export function devnetAccounts(): Record<DevnetRole, DevnetAccount> {
  const out = {} as Record<DevnetRole, DevnetAccount>;
  for (const { role, index, description } of ROLES) {
    const hd = mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: index });
    const key = hd.getHdKey().privateKey;
    if (!key) throw new Error(`could not derive the dev key for ${role}`);
    const privateKey = toHex(key);
    out[role] = { address: hd.address, privateKey, role: description };
  }
  return out;
}

/** The 65-byte uncompressed secp256k1 public key (0x04‖X‖Y) of a private key, as Tangle wants it. */
export function uncompressedPublicKey(privateKey: Hex): Hex {
  const pk = privateKeyToAccount(privateKey).publicKey;
  if (pk.length !== 2 + 130 || !pk.startsWith('0x04')) throw new Error('unexpected public key form');
  return pk;
}
