// devnet.json: its exact shape is enforced on write and on read; a broken file gets a clear error.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { devnetAccounts } from './accounts.ts';
import { DevnetError } from './errors.ts';
import {
  type DevnetInfo,
  isDevnetAlive,
  readDevnetInfo,
  removeDevnetInfo,
  writeDevnetInfo,
} from './state.ts';

const dir = mkdtempSync(join(tmpdir(), 'devnet-state-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as const;
const sample = (): DevnetInfo => ({
  chainId: 31337,
  rpcUrl: 'http://127.0.0.1:1',
  wsUrl: 'ws://127.0.0.1:1',
  startedAt: '2026-01-01T00:00:00.000Z',
  contracts: { tangle: addr(1), cloud: addr(2), instance: addr(3), teeInstance: addr(4), toy: addr(5) },
  blueprints: { cloud: 0, instance: 1, teeInstance: 2, toy: 3 },
  services: { cloud: 0, instance: 1, teeInstance: 2, toy: 3 },
  accounts: devnetAccounts(),
});

describe('devnet.json', () => {
  it('round-trips a description', () => {
    const file = join(dir, 'ok.json');
    writeDevnetInfo(file, sample());
    expect(readDevnetInfo(file)).toEqual(sample());
  });

  it('is undefined when there is no file', () => {
    expect(readDevnetInfo(join(dir, 'absent.json'))).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"chainId":'],
    ['an extra key', JSON.stringify({ ...sample(), extra: 1 })],
    ['a missing key', JSON.stringify({ ...sample(), services: { cloud: 0, instance: 1, teeInstance: 2 } })],
    ['a bad address', JSON.stringify({ ...sample(), contracts: { ...sample().contracts, toy: '0x12' } })],
  ])('refuses a file with %s, naming the file and what to do', (_why, text) => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, text);
    try {
      readDevnetInfo(file);
      expect.unreachable('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(DevnetError);
      expect((err as DevnetError).code).toBe('STATE_INVALID');
      expect((err as Error).message).toContain(file);
      expect((err as Error).message).toContain('delete it');
    }
  });

  it('refuses to write a description of the wrong shape', () => {
    const bad = { ...sample(), chainId: -1 };
    expect(() => writeDevnetInfo(join(dir, 'never.json'), bad)).toThrow();
  });

  it('is removed only while it still describes the same devnet', () => {
    const file = join(dir, 'mine.json');
    writeDevnetInfo(file, sample());
    removeDevnetInfo(file, { ...sample(), startedAt: '2026-01-02T00:00:00.000Z' });
    expect(readDevnetInfo(file)).toBeDefined();
    removeDevnetInfo(file, sample());
    expect(readDevnetInfo(file)).toBeUndefined();
  });

  it('does not pass for alive when nothing answers at its RPC', async () => {
    expect(await isDevnetAlive(sample())).toBe(false);
  });
});
