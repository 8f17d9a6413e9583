import { describe, expect, it } from 'vitest';
import { loadEnvironment } from './env.ts';
import { isSdkError, type SdkError } from './errors.ts';

const good = {
  HTTP_RPC_URL: 'http://127.0.0.1:8545',
  WS_RPC_URL: 'ws://127.0.0.1:8545',
  DATA_DIR: '/tmp/data',
  BLUEPRINT_ID: '3',
  SERVICE_ID: '7',
  TANGLE_CONTRACT: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
  PROTOCOL: 'tangle',
  TEST_MODE: 'true',
  KEYSTORE_PASSWORD: ' pass with spaces ',
};

function configError(env: Record<string, string>): SdkError {
  try {
    loadEnvironment(env);
  } catch (e) {
    if (isSdkError(e, 'CONFIG')) return e;
    throw e;
  }
  throw new Error('expected a CONFIG error');
}

describe('loadEnvironment', () => {
  it('reads a complete environment with defaults', () => {
    const env = loadEnvironment(good);
    expect(env.blueprintId).toBe(3n);
    expect(env.serviceId).toBe(7n);
    expect(env.tangleContract).toBe('0x5FbDB2315678afecb367f032d93F642f64180aa3');
    expect(env.keystoreUri).toBe('./keystore');
    expect(env.testMode).toBe(true);
    expect(env.keystorePassword).toBe(' pass with spaces ');
    expect(env.registrationModeOn).toBe(false);
    expect(env.stakingContract).toBeUndefined();
  });

  it('lists every missing and malformed variable in one error, without echoing values', () => {
    const e = configError({
      HTTP_RPC_URL: 'ftp://x',
      WS_RPC_URL: 'http://not-ws',
      BLUEPRINT_ID: '-1',
      TANGLE_CONTRACT: '0x1234',
      STAKING_CONTRACT: 'nope',
      PROTOCOL: 'eigenlayer',
      TEST_MODE: 'maybe',
      KEYSTORE_PASSWORD: 'secret-pw',
    });
    const vars = (e.details!['problems'] as Array<{ variable: string }>).map((p) => p.variable).sort();
    expect(vars).toEqual(
      [
        'BLUEPRINT_ID',
        'DATA_DIR',
        'HTTP_RPC_URL',
        'PROTOCOL',
        'SERVICE_ID',
        'STAKING_CONTRACT',
        'TANGLE_CONTRACT',
        'TEST_MODE',
        'WS_RPC_URL',
      ].sort(),
    );
    for (const v of vars) expect(e.message).toContain(v);
    expect(e.message).not.toContain('secret-pw');
  });

  it('does not require SERVICE_ID in registration mode, and requires an output path for capture-only', () => {
    const { SERVICE_ID: _, ...rest } = good;
    const env = loadEnvironment({ ...rest, REGISTRATION_MODE_ON: '1' });
    expect(env.serviceId).toBeUndefined();
    expect(env.registrationModeOn).toBe(true);
    const e = configError({ ...rest, REGISTRATION_MODE_ON: '1', REGISTRATION_CAPTURE_ONLY: 'true' });
    expect(e.message).toContain('REGISTRATION_OUTPUT_PATH');
  });

  it('rejects ids that overflow uint64', () => {
    const e = configError({ ...good, SERVICE_ID: (2n ** 64n).toString() });
    expect(e.message).toContain('SERVICE_ID');
  });
});
