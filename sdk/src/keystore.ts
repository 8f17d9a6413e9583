// The operator's secp256k1 key: load it from KEYSTORE_URI (encrypted JSON or, in TEST_MODE, a dev
// key file) and create new keystores. The private key never leaves this module in a printable form.
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { inspect } from 'node:util';
import { encryptKeystoreJson, Wallet } from 'ethers';
import { type Address, type Hex, isHex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { writeFileAtomic } from './atomic-file.ts';
import { SdkError } from './errors.ts';

/**
 * When KEYSTORE_URI names a directory, the key is read from one of these files inside it (first
 * found wins): the encrypted Web3 secret-storage JSON, then the plain hex dev key (TEST_MODE only).
 */
export const KEYSTORE_ENCRYPTED_FILE = 'operator-ecdsa.json';
export const KEYSTORE_DEV_FILE = 'operator-ecdsa.key';

/** The loaded operator key. Printing it (inspect, JSON, pino) shows only public facts. */
export class OperatorKey {
  /** viem account that signs transactions; it does not expose the private key as a property. */
  readonly account: LocalAccount;
  readonly address: Address;
  /** 65-byte uncompressed secp256k1 public key, 0x04‖X‖Y, as registerOperator wants it. */
  readonly publicKey: Hex;
  readonly kind: 'encrypted' | 'dev';
  readonly path: string;

  constructor(account: LocalAccount, kind: 'encrypted' | 'dev', path: string) {
    this.account = account;
    this.address = account.address;
    this.publicKey = account.publicKey;
    this.kind = kind;
    this.path = path;
  }

  toJSON(): Record<string, string> {
    return { address: this.address, publicKey: this.publicKey, kind: this.kind, path: this.path };
  }

  [inspect.custom](): string {
    return `OperatorKey ${inspect(this.toJSON())}`;
  }
}

export interface LoadKeystoreOptions {
  /** KEYSTORE_URI: a key file, or a directory holding one of the well-known file names. */
  uri: string;
  password?: string | undefined;
  /** Plain dev key files are refused unless this is true (TEST_MODE). */
  testMode?: boolean;
}

async function resolveKeyFile(uri: string): Promise<string> {
  const path = uri.startsWith('file://') ? new URL(uri).pathname : uri;
  const st = await stat(path).catch(() => undefined);
  if (!st) {
    throw new SdkError(
      'KEYSTORE',
      `No keystore at ${path}: create one (createKeystore / the operator CLI) or point KEYSTORE_URI at it.`,
    );
  }
  if (!st.isDirectory()) return path;
  for (const name of [KEYSTORE_ENCRYPTED_FILE, KEYSTORE_DEV_FILE]) {
    const candidate = join(path, name);
    if (await stat(candidate).catch(() => undefined)) return candidate;
  }
  throw new SdkError(
    'KEYSTORE',
    `The keystore directory ${path} holds neither ${KEYSTORE_ENCRYPTED_FILE} nor ${KEYSTORE_DEV_FILE}; create a key there.`,
  );
}

/** Loads the operator key from KEYSTORE_URI. Errors never contain key material or the password. */
export async function loadKeystore(opts: LoadKeystoreOptions): Promise<OperatorKey> {
  const file = await resolveKeyFile(opts.uri);
  const content = (await readFile(file, 'utf8')).trim();
  if (content.startsWith('{')) {
    if (opts.password === undefined) {
      throw new SdkError(
        'KEYSTORE',
        `The keystore ${file} is encrypted: set KEYSTORE_PASSWORD to its password.`,
      );
    }
    let privateKey: string;
    try {
      privateKey = (await Wallet.fromEncryptedJson(content, opts.password)).privateKey;
    } catch (e) {
      // ethers' message may say "incorrect password" or describe a malformed file; neither leaks a key.
      throw new SdkError(
        'KEYSTORE',
        `Cannot decrypt the keystore ${file} (wrong KEYSTORE_PASSWORD or not a Web3 secret-storage JSON): ${(e as Error).message}`,
      );
    }
    return new OperatorKey(privateKeyToAccount(privateKey as Hex), 'encrypted', file);
  }
  const hex = content.startsWith('0x') ? content : `0x${content}`;
  if (!isHex(hex, { strict: true }) || hex.length !== 66) {
    throw new SdkError(
      'KEYSTORE',
      `The keystore ${file} is neither an encrypted JSON keystore nor a 32-byte hex private key.`,
    );
  }
  if (!opts.testMode) {
    throw new SdkError(
      'KEYSTORE',
      `The keystore ${file} is a plain (unencrypted) dev key, refused outside TEST_MODE: ` +
        'create an encrypted keystore (createKeystore with a password) or set TEST_MODE=true on a dev chain.',
    );
  }
  try {
    return new OperatorKey(privateKeyToAccount(hex as Hex), 'dev', file);
  } catch {
    throw new SdkError('KEYSTORE', `The key in ${file} is not a valid secp256k1 private key.`);
  }
}

export interface CreateKeystoreOptions {
  /** A file path, or an existing directory (or one ending in '/') that gets the well-known file name. */
  path: string;
  /** With a password: encrypted Web3 secret-storage JSON. Without: a plain hex dev key file. */
  password?: string | undefined;
  /** Import this key instead of generating one. */
  privateKey?: Hex | undefined;
  /** scrypt cost (default: ethers' default, 2^17); lower only for tests. */
  scryptN?: number | undefined;
  /** Replace an existing file (default false: refuse). */
  overwrite?: boolean;
}

export interface CreatedKeystore {
  path: string;
  address: Address;
  publicKey: Hex;
  kind: 'encrypted' | 'dev';
}

/** Writes a new keystore file (mode 0600, atomically) and returns its public facts. */
export async function createKeystore(opts: CreateKeystoreOptions): Promise<CreatedKeystore> {
  const kind = opts.password === undefined ? 'dev' : 'encrypted';
  const st = await stat(opts.path).catch(() => undefined);
  const isDir = st?.isDirectory() || opts.path.endsWith('/');
  const file = isDir
    ? join(opts.path, kind === 'dev' ? KEYSTORE_DEV_FILE : KEYSTORE_ENCRYPTED_FILE)
    : opts.path;
  if (!opts.overwrite && (await stat(file).catch(() => undefined))) {
    throw new SdkError('KEYSTORE', `A keystore already exists at ${file}; refusing to overwrite it.`);
  }
  const privateKey = opts.privateKey ?? generatePrivateKey();
  let account: LocalAccount;
  try {
    account = privateKeyToAccount(privateKey);
  } catch {
    throw new SdkError('KEYSTORE', 'The given privateKey is not a valid 32-byte secp256k1 private key.');
  }
  let body: string;
  if (opts.password === undefined) {
    body = `${privateKey}\n`;
  } else if (opts.scryptN !== undefined) {
    body = await encryptKeystoreJson({ address: account.address, privateKey }, opts.password, {
      scrypt: { N: opts.scryptN },
    });
  } else {
    body = await new Wallet(privateKey).encrypt(opts.password);
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, body, 0o600);
  return { path: file, address: account.address, publicKey: account.publicKey, kind };
}
