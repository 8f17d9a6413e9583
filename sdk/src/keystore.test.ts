import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { isSdkError } from './errors.ts';
import { createKeystore, KEYSTORE_DEV_FILE, KEYSTORE_ENCRYPTED_FILE, loadKeystore } from './keystore.ts';

const tmp = () => mkdtemp(join(tmpdir(), 'sdk-keystore-'));

async function expectKeystoreError(p: Promise<unknown>, text: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isSdkError(e, 'KEYSTORE'), String(e)).toBe(true);
  expect((e as Error).message).toMatch(text);
}

describe('keystore', () => {
  it('creates and loads an encrypted keystore in a directory (well-known file name, mode 0600)', async () => {
    const dir = await tmp();
    const pk = generatePrivateKey();
    const created = await createKeystore({ path: dir, password: 'pw', privateKey: pk, scryptN: 1024 });
    expect(created.path).toBe(join(dir, KEYSTORE_ENCRYPTED_FILE));
    expect(((await stat(created.path)).mode & 0o777).toString(8)).toBe('600');
    const file = await readFile(created.path, 'utf8');
    expect(file).not.toContain(pk.slice(2));
    const key = await loadKeystore({ uri: dir, password: 'pw' });
    const expected = privateKeyToAccount(pk);
    expect(key.address).toBe(expected.address);
    expect(key.publicKey).toMatch(/^0x04[0-9a-f]{128}$/);
    expect(key.kind).toBe('encrypted');
    // The account signs with the imported key.
    const sig = await key.account.signMessage({ message: 'hi' });
    expect(sig).toBe(await expected.signMessage({ message: 'hi' }));
  });

  it('reads an encrypted keystore written by ethers Wallet.encrypt (default scrypt)', async () => {
    const dir = await tmp();
    const created = await createKeystore({ path: join(dir, 'k.json'), password: 'pw' });
    const key = await loadKeystore({ uri: created.path, password: 'pw' });
    expect(key.address).toBe(created.address);
  }, 60_000);

  it('refuses a wrong or missing password with a clear error', async () => {
    const dir = await tmp();
    await createKeystore({ path: dir, password: 'right', scryptN: 1024 });
    await expectKeystoreError(loadKeystore({ uri: dir, password: 'wrong' }), /KEYSTORE_PASSWORD/);
    await expectKeystoreError(loadKeystore({ uri: dir }), /set KEYSTORE_PASSWORD/);
  });

  it('accepts a plain dev key only in TEST_MODE', async () => {
    const dir = await tmp();
    const pk = generatePrivateKey();
    const created = await createKeystore({ path: `${dir}/`, privateKey: pk });
    expect(created.path).toBe(join(dir, KEYSTORE_DEV_FILE));
    await expectKeystoreError(loadKeystore({ uri: dir }), /outside TEST_MODE/);
    const key = await loadKeystore({ uri: dir, testMode: true });
    expect(key.address).toBe(privateKeyToAccount(pk).address);
    // A key without 0x prefix is fine too.
    const f = join(dir, 'raw.key');
    await writeFile(f, pk.slice(2));
    expect((await loadKeystore({ uri: f, testMode: true })).address).toBe(key.address);
  });

  it('rejects a missing path, an empty directory, garbage, and refuses to overwrite', async () => {
    const dir = await tmp();
    await expectKeystoreError(loadKeystore({ uri: join(dir, 'nope') }), /No keystore/);
    await expectKeystoreError(loadKeystore({ uri: dir }), /neither/);
    await writeFile(join(dir, 'bad'), 'not a key');
    await expectKeystoreError(
      loadKeystore({ uri: join(dir, 'bad'), testMode: true }),
      /neither an encrypted/,
    );
    await createKeystore({ path: join(dir, 'a.key') });
    await expectKeystoreError(createKeystore({ path: join(dir, 'a.key') }), /refusing to overwrite/);
    await expectKeystoreError(
      createKeystore({ path: join(dir, 'b.key'), privateKey: '0x1234' }),
      /not a valid/,
    );
  });

  it('never prints the private key: util.inspect, JSON and pino show only public facts', async () => {
    const dir = await tmp();
    const pk = generatePrivateKey();
    await createKeystore({ path: dir, privateKey: pk });
    const key = await loadKeystore({ uri: dir, testMode: true });
    const chunks: string[] = [];
    const sink = new Writable({
      write(c, _e, cb) {
        chunks.push(String(c));
        cb();
      },
    });
    const log = pino({ level: 'trace' }, sink);
    log.info({ key }, 'loaded');
    log.info({ account: key.account }, 'account');
    log.info(key as unknown as object, 'spread');
    const printed = [
      chunks.join(''),
      inspect(key, { depth: 10, showHidden: true }),
      inspect(key.account, { depth: 10, showHidden: true }),
      JSON.stringify(key),
      String(key),
    ].join('\n');
    expect(printed).toContain(key.address);
    expect(printed.toLowerCase()).not.toContain(pk.slice(2).toLowerCase());
  });
});
