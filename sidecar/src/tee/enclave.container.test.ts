// The CVM side in the built image: the bundled sidecar on the image's Node.js, with a dstack agent
// socket mounted at /var/run/dstack.sock as the Phala compose mounts it, makes its sealing key,
// quotes over the binding and opens a sealed secret (the image carries what the sidecar needs).
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBinding, contextString, fromHex, sealSecrets } from '@agent-sandbox/attestation';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeDstack, startFakeDstack } from '../testing/fake-dstack.ts';
import { type SandboxContainer, startSandboxContainer } from '../testing/sandbox-container.ts';

const sandboxId = `sbx-${'3'.repeat(32)}`;
const ctx = contextString({
  chainId: 1,
  serviceId: 2,
  sandboxId,
  operator: `0x${'ef'.repeat(20)}`,
  owner: `0x${'0d'.repeat(20)}`,
});

let dir: string;
let dstack: FakeDstack;
let sb: SandboxContainer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tee-ctr-'));
  dstack = await startFakeDstack(join(dir, 'dstack.sock'));
  await chmod(dstack.socketPath, 0o666);
  sb = await startSandboxContainer(inject('sandboxImage'), {
    env: { SIDECAR_TEE: 'dstack', SIDECAR_TEE_CONTEXT: ctx },
    binds: [`${dstack.socketPath}:/var/run/dstack.sock`],
    labels: { 'agent-sandbox.test.suite': 'sidecar-tee' },
  });
});
afterAll(async () => {
  await sb?.remove();
  await dstack?.close();
  await rm(dir, { recursive: true, force: true });
});

const call = async (method: string, path: string, body?: unknown) => {
  const r = await fetch(`${sb.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sb.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: test-only convenience
  return { status: r.status, json: (await r.json()) as any };
};

describe('the sandbox image as a dstack CVM sidecar', () => {
  it('quotes over the binding through the mounted socket and opens a sealed secret', async () => {
    const nonce = randomBytes(32).toString('hex');
    const pk = await call('GET', `/tee/public-key?nonce=${nonce}`);
    expect(pk.status).toBe(200);
    checkBinding(fromHex(pk.json.evidence).subarray(568, 632), ctx, fromHex(pk.json.pubkey), fromHex(nonce));
    const body = sealSecrets(fromHex(pk.json.pubkey), ctx, sandboxId, { IN_IMAGE: 'sealed-in-container' });
    expect((await call('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: true,
      secrets_count: 1,
    });
    const run = await call('POST', '/terminals/commands', { command: 'echo "$IN_IMAGE"' });
    expect(run.json.result.stdout.trim()).toBe('sealed-in-container');
  });
});
