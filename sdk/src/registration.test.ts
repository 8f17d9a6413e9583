import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { encodeAbiParameters, toFunctionSelector } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSdkError } from './errors.ts';
import { loadKeystore } from './keystore.ts';
import { register } from './registration.ts';
import { maybeDevnet } from './testing/maybe-devnet.ts';
import { freshAccount, stakeFresh, type ToyChain, toyChain, writeDevKey } from './testing/toy-chain.ts';

let chain: ToyChain;
beforeAll(async () => {
  chain = await toyChain(maybeDevnet());
});
afterAll(async () => chain?.stop());

async function newOperatorKey(staked = true) {
  const acct = freshAccount();
  await chain.client.request({
    method: 'anvil_setBalance' as never,
    params: [acct.address, '0x56bc75e2d63100000'] as never,
  });
  if (staked) await stakeFresh(chain, acct);
  const dir = await mkdtemp(join(tmpdir(), 'sdk-reg-'));
  return loadKeystore({ uri: await writeDevKey(dir, acct), testMode: true });
}

const logger = pino({ level: 'silent' });

describe('register', () => {
  it('registers once (3-argument form) and is idempotent afterwards', async () => {
    const key = await newOperatorKey();
    const base = {
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      blueprintId: chain.blueprintId,
      key,
      rpcAddress: 'http://op.example:9000',
      logger,
    };
    const first = await register(base);
    expect(first.status).toBe('registered');
    const tx = await chain.client.getTransaction({ hash: first.txHash! });
    expect(tx.input.slice(0, 10)).toBe('0xd4e1ab7c');
    expect(tx.input.slice(0, 10)).toBe(toFunctionSelector('registerOperator(uint64,bytes,string)'));
    expect(await register(base)).toEqual({ status: 'already-registered' });
  });

  it('uses the 4-argument form when registration inputs are given', async () => {
    const key = await newOperatorKey();
    const res = await register({
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      blueprintId: chain.blueprintId,
      key,
      rpcAddress: '',
      registrationInputs: encodeAbiParameters([{ type: 'uint32' }], [3]),
      logger,
    });
    const tx = await chain.client.getTransaction({ hash: res.txHash! });
    expect(tx.input.slice(0, 10)).toBe('0x7324e916');
  });

  it('captures the payload instead of sending it in capture-only mode', async () => {
    const key = await newOperatorKey();
    const out = join(await mkdtemp(join(tmpdir(), 'sdk-reg-')), 'registration.json');
    const res = await register({
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      blueprintId: 42n,
      key,
      rpcAddress: 'x',
      captureOnlyPath: out,
      logger,
    });
    expect(res.status).toBe('captured');
    expect(JSON.parse(await readFile(out, 'utf8'))).toMatchObject({
      blueprintId: '42',
      ecdsaPublicKey: key.publicKey,
      operator: key.address,
    });
  });

  it('is refused by name when the operator is not staked (Tangle checks its staking contract)', async () => {
    const key = await newOperatorKey(false);
    const e = await register({
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      blueprintId: chain.blueprintId,
      key,
      rpcAddress: '',
      logger,
    }).catch((x) => x);
    expect(isSdkError(e, 'REGISTRATION')).toBe(true);
    expect(e.details).toMatchObject({ errorName: 'OperatorNotActive' });
    expect(e.message).toMatch(
      /not an active operator in Tangle's staking contract.*Stake in the staking contract/,
    );
  });

  it('fails with a REGISTRATION error naming the revert for an unknown blueprint', async () => {
    const key = await newOperatorKey();
    const e = await register({
      httpRpcUrl: chain.rpcUrl,
      tangle: chain.tangle,
      blueprintId: 9999n,
      key,
      rpcAddress: '',
      logger,
    }).catch((x) => x);
    expect(isSdkError(e, 'REGISTRATION')).toBe(true);
    expect(e.message).toContain('BlueprintNotFound');
  });
});
