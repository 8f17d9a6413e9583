// Security (malicious operator): a sign-in message naming another chain than the one the user
// works on is refused before anything is signed, when the CLI knows the chain (the devnet file,
// or the --rpc node's eth_chainId, here a local JSON-RPC server); without either, as before.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-harness.ts';
import { type SpecOperator, startSpecOperator } from '../testing/spec-operator.ts';

const key = generatePrivateKey();
const owner = privateKeyToAccount(key);
let op: SpecOperator | undefined;
let rpc: Server;
let rpcUrl: string;
let configDir: string;

beforeEach(async () => {
  configDir = await mkdtemp(join(tmpdir(), 'client-chain-'));
  // A JSON-RPC node on chain 31337 (0x7a69), answering eth_chainId as a real one does.
  rpc = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify(
          method === 'eth_chainId'
            ? { jsonrpc: '2.0', id, result: '0x7a69' }
            : { jsonrpc: '2.0', id, error: { code: -32601, message: 'no' } },
        ),
      );
    });
  });
  await new Promise<void>((r) => rpc.listen(0, '127.0.0.1', r));
  rpcUrl = `http://127.0.0.1:${(rpc.address() as { port: number }).port}`;
});
afterEach(async () => {
  await op?.close();
  await new Promise((r) => rpc.close(r));
  rmSync(configDir, { recursive: true, force: true });
});

async function operatorOn(chainId: number): Promise<SpecOperator> {
  op = await startSpecOperator({ chainId });
  op.sandboxes.set('sb-1', { id: 'sb-1', owner: owner.address.toLowerCase(), state: 'running', secrets: {} });
  return op;
}

describe('malicious operator: a sign-in message for another chain', () => {
  it('refused before signing when --rpc names the chain; accepted for the same chain', async () => {
    const bad = await operatorOn(1);
    const r = await runCliInProcess(
      ['get', 'sb-1', '--operator', bad.url, '--private-key', key, '--rpc', rpcUrl],
      {
        configDir,
      },
    );
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/it names chain 1, not 31337.*refusing to sign/);
    expect(bad.log).not.toContain('POST /api/auth/session');
    await bad.close();
    const good = await operatorOn(31337);
    const ok = await runCliInProcess(
      ['get', 'sb-1', '--operator', good.url, '--private-key', key, '--rpc', rpcUrl],
      {
        configDir,
      },
    );
    expect(ok.code).toBe(0);
  });

  it('an --rpc that does not answer eth_chainId stops the sign-in with a message saying what to do', async () => {
    const o = await operatorOn(31337);
    const r = await runCliInProcess(
      ['get', 'sb-1', '--operator', o.url, '--private-key', key, '--rpc', 'http://127.0.0.1:9'],
      { configDir },
    );
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/cannot read the chain id from --rpc http:\/\/127\.0\.0\.1:9/);
    expect(o.log).not.toContain('POST /api/auth/session');
  });

  it('without a devnet or --rpc the chain is not known and not checked (as before)', async () => {
    const o = await operatorOn(1);
    const r = await runCliInProcess(['get', 'sb-1', '--operator', o.url, '--private-key', key], {
      configDir,
    });
    expect(r.code).toBe(0);
  });
});
