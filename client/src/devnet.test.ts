// The devnet-JSON loader: the real file the shared devnet wrote, and every kind of bad file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { loadDevnet } from './devnet.ts';
import { ExitCode, isClientError } from './errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'client-devnet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

const minimal = {
  chainId: 31337,
  rpcUrl: 'http://127.0.0.1:8545',
  contracts: {
    tangle: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    cloud: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
  },
  services: { cloud: 0 },
  accounts: {
    user: {
      address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
    },
  },
};

describe('loadDevnet', () => {
  it('reads the devnet.json the shared devnet wrote', async () => {
    const info = inject('devnet');
    const d = await loadDevnet(inject('devnetStateFile'));
    expect(d.rpcUrl).toBe(info.rpcUrl);
    expect(d.chainId).toBe(info.chainId);
    expect(d.tangle).toBe(info.contracts.tangle);
    expect(d.blueprint).toBe(info.contracts.cloud);
    expect(d.serviceId).toBe(BigInt(info.services.cloud));
    expect(d.accounts.user?.address).toBe(info.accounts.user.address);
    expect(Object.keys(d.accounts)).toContain('operator1');
  });

  it('accepts a minimal file and optional operator URLs', async () => {
    const d = await loadDevnet(
      file('min.json', JSON.stringify({ ...minimal, operators: [{ apiUrl: 'http://127.0.0.1:9090' }] })),
    );
    expect(d.serviceId).toBe(0n);
    expect(d.operatorUrls).toEqual(['http://127.0.0.1:9090']);
  });

  it.each([
    ['missing', undefined, /cannot read devnet file .*ENOENT/],
    ['notjson.json', '{oops', /is not JSON/],
    [
      'noaddr.json',
      JSON.stringify({ ...minimal, contracts: { tangle: '0x123' } }),
      /contracts\.tangle: not an address/,
    ],
    ['norpc.json', JSON.stringify({ ...minimal, rpcUrl: 'nope' }), /rpcUrl/],
    [
      'badkey.json',
      JSON.stringify({
        ...minimal,
        accounts: { user: { address: minimal.accounts.user.address, privateKey: '0x12' } },
      }),
      /accounts\.user\.privateKey/,
    ],
  ])('%s: a clear USAGE error naming the problem', async (name, content, message) => {
    const path = content === undefined ? join(dir, name) : file(name, content);
    const err = await loadDevnet(path).catch((e) => e);
    expect(isClientError(err, 'USAGE')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.USAGE);
    expect(err.message).toMatch(message);
  });
});
