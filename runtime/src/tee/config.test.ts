// Backend selection and trust anchors: unknown or unconfigured backends fail saying what to set,
// and a test PKI's anchors are refused outside TEST_MODE (they would trust evidence no TEE signed).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { productionAnchors } from '@agent-sandbox/attestation';
import { createSevTestPki, saveSevTestPki } from '@agent-sandbox/attestation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTeeBackend, teeTrustAnchors } from './config.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tee-config-'));
  await saveSevTestPki(join(dir, 'pki'), await createSevTestPki());
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const base = { tsmRoot: '/nonexistent', pccsUrl: 'http://127.0.0.1:1', testMode: false };

describe('TEE backend selection', () => {
  it('names what to set for a missing, unknown or half-configured backend', async () => {
    await expect(openTeeBackend({ ...base, backend: undefined })).rejects.toThrow(/needs TEE_BACKEND/);
    await expect(openTeeBackend({ ...base, backend: 'sgx' })).rejects.toThrow(/TEE_BACKEND=sgx is unknown/);
    await expect(openTeeBackend({ ...base, backend: 'direct' })).rejects.toThrow(
      /TEE_DIRECT_TYPE=tdx or sev/,
    );
    await expect(openTeeBackend({ ...base, backend: 'phala' })).rejects.toThrow(/needs PHALA_API_KEY/);
    await expect(openTeeBackend({ ...base, backend: 'direct', directType: 'tdx' })).rejects.toThrow(
      /not a confidential VM/,
    );
  });
  it('loads test anchors only in TEST_MODE', async () => {
    await expect(teeTrustAnchors({ testAnchorsDir: join(dir, 'pki'), testMode: false })).rejects.toThrow(
      /only with TEST_MODE=true/,
    );
    const a = await teeTrustAnchors({ testAnchorsDir: join(dir, 'pki'), testMode: true });
    expect(a.sev.ark).toContain('BEGIN CERTIFICATE');
    expect(a.sev.ark).not.toBe(productionAnchors().sev.ark);
    expect(await teeTrustAnchors({ testAnchorsDir: undefined, testMode: true })).toBe(productionAnchors());
  });
});
