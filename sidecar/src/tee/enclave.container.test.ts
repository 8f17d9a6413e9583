// The CVM side in the built image: the bundled sidecar on the image's Node.js, with a dstack agent
// socket mounted at /run/tee/dstack.sock as the Phala compose mounts it (the socket itself 0666,
// the worst a host could give it), makes its sealing key, quotes over the binding, takes a sealed
// secret and a command from its owner over the channel — and the agent user cannot reach the
// socket (no quote oracle), nor can the operator's token run anything.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBinding, contextString, fromHex, sealSecrets } from '@agent-sandbox/attestation';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FakeDstack, startFakeDstack } from '../testing/fake-dstack.ts';
import { ownerChannel } from '../testing/owner-channel.ts';
import { type SandboxContainer, startSandboxContainer } from '../testing/sandbox-container.ts';

const sandboxId = `sbx-${'3'.repeat(32)}`;
const owner = privateKeyToAccount(`0x${'e5'.repeat(32)}`);
const ctx = contextString({
  chainId: 1,
  serviceId: 2,
  sandboxId,
  operator: `0x${'ef'.repeat(20)}`,
  owner: owner.address,
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
    binds: [`${dstack.socketPath}:/run/tee/dstack.sock`],
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
  it('quotes over the binding, opens a sealed secret from its owner; the agent cannot reach the socket', async () => {
    const nonce = randomBytes(32).toString('hex');
    const pk = await call('GET', `/tee/public-key?nonce=${nonce}`);
    expect(pk.status).toBe(200);
    checkBinding(fromHex(pk.json.evidence).subarray(568, 632), ctx, fromHex(pk.json.pubkey), fromHex(nonce));
    const ch = ownerChannel({ url: sb.url, operatorToken: sb.token, pubkeyHex: pk.json.pubkey, ctx, owner });
    const body = sealSecrets(fromHex(pk.json.pubkey), ctx, sandboxId, { IN_IMAGE: 'sealed-in-container' });
    expect((await ch.client.json('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: true,
      secrets_count: 1,
    });
    const run = await ch.client.json('POST', '/terminals/commands', { command: 'echo "$IN_IMAGE"' });
    expect((run.json as { result: { stdout: string } }).result.stdout.trim()).toBe('sealed-in-container');
    // The operator's token runs nothing.
    expect((await call('POST', '/terminals/commands', { command: 'id' })).status).toBe(403);

    // No quote oracle: as the agent (uid 1000), connecting to the socket fails; the sidecar's works.
    const before = dstack.calls.length;
    const probe = await ch.client.json('POST', '/terminals/commands', {
      command:
        "id -u; node -e \"require('net').connect('/run/tee/dstack.sock').on('connect',()=>{console.log('CONNECTED');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(0)})\"",
    });
    const out = (probe.json as { result: { stdout: string } }).result.stdout.trim().split('\n');
    expect(out).toEqual(['1000', 'EACCES']);
    expect(dstack.calls.length).toBe(before);
  });
});
