// The sign-in relay attack, end to end: an honest operator API (real SessionAuth, real HTTP) and a
// second, malicious operator PROCESS that relays its challenges to our real client. Verbatim
// relay: the client refuses to sign (the message names the honest operator, not the one it talks
// to). Rebound relay (message rewritten to name the relay, honest nonce kept): the client signs,
// and the honest operator refuses the signature, by nonce and by message.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isClientError } from '../../client/src/errors.ts';
import { OperatorHttp } from '../../client/src/operator-http.ts';
import { type Harness, startHarness } from '../../runtime/src/api/testing/harness.ts';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const RELAY = join(import.meta.dirname, 'relay-operator.ts');

function startRelay(
  upstream: string,
  mode: 'verbatim' | 'rebind',
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', TSX, RELAY, upstream, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((res, rej) => {
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => l.startsWith('{'));
      if (line) res({ url: (JSON.parse(line) as { url: string }).url, child });
    });
    child.on('exit', (code) => rej(new Error(`relay exited (${code}) before listening`)));
  });
}

const stopped = (c: ChildProcess) =>
  c.exitCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r()) && c.kill());

describe('sign-in relayed through a malicious operator', () => {
  let honest: Harness;
  const relays: ChildProcess[] = [];
  const user = privateKeyToAccount(generatePrivateKey());

  beforeAll(async () => {
    honest = await startHarness();
  });
  afterAll(async () => {
    await Promise.all(relays.map(stopped));
    await honest.close();
  });

  it('verbatim relay: the client refuses to sign a message naming another operator', async () => {
    const relay = await startRelay(honest.url, 'verbatim');
    relays.push(relay.child);
    const client = new OperatorHttp({ baseUrl: relay.url, account: user });
    const err = await client.login().catch((e: unknown) => e);
    expect(isClientError(err) && err.code).toBe('BAD_RESPONSE');
    expect((err as Error).message).toContain(`names ${new URL(honest.url).host}`);
    const log = (await (await fetch(`${relay.url}/relay/log`)).json()) as { signatures: number };
    expect(log.signatures).toBe(0);
  });

  it('rebound relay: the client signs for the relay, and the honest operator refuses it', async () => {
    const relay = await startRelay(honest.url, 'rebind');
    relays.push(relay.child);
    const client = new OperatorHttp({ baseUrl: relay.url, account: user });
    const err = await client.login().catch((e: unknown) => e);
    expect(isClientError(err) && err.code).toBe('UNAUTHORIZED');
    const log = (await (await fetch(`${relay.url}/relay/log`)).json()) as {
      signatures: number;
      attempts: Array<{ kind: string; status: number }>;
    };
    expect(log.signatures).toBe(1);
    expect(log.attempts).toEqual([
      { kind: 'nonce', status: 401 },
      { kind: 'message', status: 401 },
    ]);
    // The honest operator itself still signs the user in directly.
    const direct = new OperatorHttp({ baseUrl: honest.url, account: user });
    expect((await direct.login()).address).toBe(user.address.toLowerCase());
  });
});
