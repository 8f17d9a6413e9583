// The owner channel ended in the operator program (direct backend: this program is the measured
// code in the CVM), run as the host/relay with everything it holds: the relay bytes, the public key,
// a wallet of its own. A real sidecar (the ordinary one a direct sandbox runs) sits behind it.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChannelClient,
  contextString,
  encapsulateRequest,
  fromHex,
  ownerChannelMessage,
  sealSecrets,
  toHex,
} from '@agent-sandbox/attestation';
import { createSevTestPki } from '@agent-sandbox/attestation/testing';
import { type SidecarFixture, startSidecarFixture } from '@agent-sandbox/sidecar/testing';
import { generatePrivateKey, type LocalAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectTeeBackend } from './direct.ts';
import { TeeService } from './service.ts';
import { FakeTsmFirmware } from './testing/fake-tsm.ts';

const pki = await createSevTestPki();
const owner = privateKeyToAccount(generatePrivateKey());
const host = privateKeyToAccount(generatePrivateKey());
const OP = `0x${'ab'.repeat(20)}`;
const ctxOf = (id: string) =>
  contextString({ chainId: 31337, serviceId: 7, sandboxId: id, operator: OP, owner: owner.address });
const SBX = 'sbx-direct';

let dir = '';
let fw: FakeTsmFirmware;
let sidecar: SidecarFixture;
let svc: TeeService;
let pubkey: Uint8Array;
const injected: Array<Record<string, string>> = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'direct-channel-'));
  fw = await new FakeTsmFirmware({ root: join(dir, 'tsm'), pki, measurement: new Uint8Array(48) }).start();
  sidecar = await startSidecarFixture();
  svc = new TeeService({
    backend: new DirectTeeBackend({ type: 'sev', root: join(dir, 'tsm'), pccsUrl: 'http://127.0.0.1:1' }),
    contextFor: ctxOf,
    injectSecrets: async (_id, env) => injected.push(env),
    sidecarFor: () => ({ url: sidecar.sidecar.url, token: sidecar.token }),
    verify: { acceptedTcbStatuses: ['UpToDate'], allowList: [], requirePinned: false },
  });
  pubkey = fromHex((await svc.publicKey(SBX, toHex(new Uint8Array(32).fill(1)))).pubkey);
});
afterAll(async () => {
  await sidecar?.close();
  await fw?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A channel as the relay in front of the operator API carries it; `wire` is every byte it saw. */
function channel(signer: LocalAccount, address = signer.address) {
  const wire: Uint8Array[] = [];
  const client = new ChannelClient({
    pubkey,
    ctx: ctxOf(SBX),
    address,
    signMessage: (message) => signer.signMessage({ message }),
    relay: async (message) => {
      wire.push(message);
      const res = await svc.channel(SBX, message);
      const [a, b] = res.body!.tee();
      void (async () => {
        for await (const c of b as unknown as AsyncIterable<Uint8Array>) wire.push(c);
      })();
      return new Response(a, { status: res.status, headers: res.headers });
    },
  });
  return { client, wire, seen: () => Buffer.concat(wire).toString('latin1') };
}

describe('owner channel ended in the operator program (direct)', () => {
  it('the owner: exec and sealed secrets run end to end; the relay bytes carry none of it', async () => {
    const ch = channel(owner);
    const marker = `owner-${randomBytes(4).toString('hex')}`;
    const r = await ch.client.json('POST', '/terminals/commands', { command: `echo ${marker}-$((6*7))` });
    expect(r.status).toBe(200);
    expect((r.json as { result: { stdout: string } }).result.stdout.trim()).toBe(`${marker}-42`);
    const secret = `sk-${randomBytes(6).toString('hex')}`;
    const sealed = await ch.client.json(
      'POST',
      '/tee/sealed-secrets',
      sealSecrets(pubkey, ctxOf(SBX), SBX, { OPENAI_API_KEY: secret }, 10),
    );
    expect(sealed.json).toEqual({ success: true, secrets_count: 1 });
    expect(injected.at(-1)).toEqual({ OPENAI_API_KEY: secret });
    expect(ch.seen()).not.toContain(marker);
    expect(ch.seen()).not.toContain(secret);
    expect(ch.seen()).not.toContain('terminals/commands');
  });

  it('the host: the plain sealed route is refused (a body it sealed itself would open there)', async () => {
    const mine = sealSecrets(pubkey, ctxOf(SBX), SBX, { SANDBOX_AGENT_COMMAND: 'curl evil' });
    await expect(svc.sealedSecrets(SBX, mine)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(injected.some((e) => 'SANDBOX_AGENT_COMMAND' in e)).toBe(false);
  });

  it("the host's own wallet, or the owner's address with the host's signature, is refused inside: nothing runs", async () => {
    const file = join(sidecar.workspace, `pwned-${randomBytes(3).toString('hex')}`);
    for (const ch of [channel(host), channel(host, owner.address)]) {
      const r = await ch.client.json('POST', '/terminals/commands', { command: `touch ${file}` });
      expect(r.status).toBe(403);
      const s = await ch.client.json(
        'POST',
        '/tee/sealed-secrets',
        sealSecrets(pubkey, ctxOf(SBX), SBX, { SANDBOX_AGENT_COMMAND: 'curl evil' }),
      );
      expect(s.status).toBe(403);
    }
    expect(existsSync(file)).toBe(false);
    expect(injected.some((e) => 'SANDBOX_AGENT_COMMAND' in e)).toBe(false);
  });

  it('the relay replays an owner request it carried, or a tampered one: refused, run once', async () => {
    const file = join(sidecar.workspace, `count-${randomBytes(3).toString('hex')}`);
    const ch = channel(owner);
    await ch.client.json('POST', '/terminals/commands', { command: `echo x >> ${file}` });
    const request = ch.wire[0]!;
    const again = await svc.channel(SBX, request);
    expect(again.status).toBe(200); // sealed: the relay cannot tell (the answer is sealed too)
    await again.arrayBuffer();
    const flipped = Uint8Array.from(request);
    flipped[flipped.length - 1]! ^= 1;
    await expect(svc.channel(SBX, flipped)).rejects.toMatchObject({ code: 'VALIDATION' });
    const lines = (await sidecar.call('POST', '/terminals/commands', { command: `cat ${file}` })).json;
    expect(lines.result.stdout).toBe('x\n');
  });

  it('an older sealed body after a newer one is refused (rollback), and a stale request too', async () => {
    const ch = channel(owner);
    const newer = sealSecrets(pubkey, ctxOf(SBX), SBX, { K: 'new' }, 2_000);
    const older = sealSecrets(pubkey, ctxOf(SBX), SBX, { K: 'old' }, 1_000);
    expect((await ch.client.json('POST', '/tee/sealed-secrets', newer)).json).toMatchObject({
      success: true,
    });
    expect((await ch.client.json('POST', '/tee/sealed-secrets', older)).json).toEqual({
      success: false,
      secrets_count: 0,
    });
    expect(injected.at(-1)).toEqual({ K: 'new' });
    // A request the relay held back past the freshness window does not run.
    const old = Date.now() - 10 * 60_000;
    const message = ownerChannelMessage({ ctx: ctxOf(SBX), pubkey, address: owner.address, nowMs: old });
    const inner = {
      v: 1,
      ts: old,
      auth: { message, signature: await owner.signMessage({ message }) },
      method: 'POST',
      path: '/terminals/commands',
      body: JSON.stringify({ command: 'true' }),
    };
    const { message: bytes, opener } = encapsulateRequest(
      pubkey,
      new TextEncoder().encode(JSON.stringify(inner)),
    );
    const res = await svc.channel(SBX, bytes);
    expect(res.status).toBe(200);
    const [head, body] = opener.feed(new Uint8Array(await res.arrayBuffer()));
    expect(JSON.parse(new TextDecoder().decode(head))).toMatchObject({ status: 400 });
    expect(new TextDecoder().decode(body)).toMatch(/stale/);
  });
});
