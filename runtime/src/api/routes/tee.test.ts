// The TEE routes over real HTTP with a real TeeService on the direct backend (test firmware over a
// temp configfs-tsm tree, test SEV PKI): happy path over the owner channel, the plain sealed route
// refused (the owner's session is no proof: the host sees it), another-tenant, and replayed or
// tampered sealed bodies; no secret in any response or log line.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChannelClient,
  contextString,
  sealSecrets,
  toHex,
  verifyBoundAttestation,
} from '@agent-sandbox/attestation';
import { createSevTestPki } from '@agent-sandbox/attestation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectTeeBackend } from '../../tee/direct.ts';
import { TeeService } from '../../tee/service.ts';
import { FakeTsmFirmware } from '../../tee/testing/fake-tsm.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

const pki = await createSevTestPki();
const anchors = { sev: { ark: pki.arkPem, ask: pki.askPem }, nitroRoot: pki.arkPem };
const OP = `0x${'cd'.repeat(20)}`;
/** The owner the binding context names (the enclave checks channel signatures against it). */
let ctxOwner = `0x${'0d'.repeat(20)}`;
const ctxOf = (id: string) =>
  contextString({ chainId: 31337, serviceId: 9, sandboxId: id, operator: OP, owner: ctxOwner });
let dir: string;
let fw: FakeTsmFirmware;
let h: Harness;
let sandboxId = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tee-route-'));
  fw = await new FakeTsmFirmware({ root: join(dir, 'tsm'), pki }).start();
  const tee = new TeeService({
    backend: new DirectTeeBackend({ type: 'sev', root: join(dir, 'tsm'), pccsUrl: 'http://127.0.0.1:1' }),
    contextFor: ctxOf,
    injectSecrets: (id, env) => Promise.resolve(h.sandboxes.injectSecrets(id, env)),
    sidecarFor: () => {
      throw new Error('no sidecar in this test');
    },
    verify: { anchors, acceptedTcbStatuses: ['UpToDate'], allowList: [], requirePinned: false },
  });
  h = await startHarness({ mode: 'tee-instance', deps: { instanceSandboxId: () => sandboxId, tee } });
});
afterAll(async () => {
  await h?.close();
  await fw?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('tee routes', () => {
  it('owner: fresh evidence over our nonce, then a sealed secret opened on the TEE side', async () => {
    const o = await h.newOwner();
    ctxOwner = o.address;
    sandboxId = h.addSandbox(o.address).id;
    const nonce = new Uint8Array(randomBytes(32));
    const r = await h.call('GET', `/api/sandbox/tee/public-key?nonce=${toHex(nonce)}`, { token: o.token });
    expect(r.status).toBe(200);
    expect(r.json.algorithm).toBe('hpke-x25519-sha256-chacha20poly1305');
    const v = verifyBoundAttestation(r.json, {
      nowMs: Date.now(),
      anchors,
      expect: { ctx: ctxOf(sandboxId), nonce },
      allowList: [{ '*': r.json.measurements.measurement }],
    });
    expect(v.verification.verdict).toBe('verified');
    const secret = `s-${randomBytes(8).toString('hex')}`;
    const body = sealSecrets(v.pubkey!, ctxOf(sandboxId), sandboxId, { API_KEY: secret });
    // The plain route: refused, whoever holds the session (the host sees it on the wire).
    const plain = await h.call('POST', '/api/sandbox/tee/sealed-secrets', { token: o.token, body });
    expect(plain.status).toBe(409);
    expect(h.sandboxes.get(sandboxId)?.userEnv ?? {}).toEqual({});
    // The owner channel through the API's relay route, signed by the owner inside.
    const ch = new ChannelClient({
      pubkey: v.pubkey!,
      ctx: ctxOf(sandboxId),
      address: o.account.address,
      signMessage: (message) => o.account.signMessage({ message }),
      relay: (bytes, type) =>
        fetch(`${h.url}/api/sandbox/tee/channel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${o.token}`, 'content-type': type },
          body: Buffer.from(bytes),
        }),
    });
    const sent = await ch.json('POST', '/tee/sealed-secrets', body);
    expect(sent.json).toEqual({ success: true, secrets_count: 1 });
    expect(h.sandboxes.get(sandboxId)?.userEnv).toEqual({ API_KEY: secret });

    // malicious-operator / network: the same body again, or a flipped byte, opens nothing
    const again = await ch.json('POST', '/tee/sealed-secrets', body);
    expect(again.json).toEqual({ success: false, secrets_count: 0 });
    const flipped = {
      ...body,
      ciphertext: `${body.ciphertext.slice(0, -2)}${body.ciphertext.endsWith('00') ? '01' : '00'}`,
    };
    expect((await ch.json('POST', '/tee/sealed-secrets', flipped)).json).toEqual({
      success: false,
      secrets_count: 0,
    });
    expect(h.transcripts.join('\n')).not.toContain(secret);
    expect(h.logLines.join('\n')).not.toContain(secret);
  });

  it('another-tenant gets 403 on every TEE route; a bad or missing nonce is a 400', async () => {
    const owner = await h.newOwner();
    sandboxId = h.addSandbox(owner.address).id;
    const other = await h.newOwner();
    const n = toHex(new Uint8Array(randomBytes(32)));
    expect(
      (await h.call('GET', `/api/sandbox/tee/attestation?nonce=${n}`, { token: other.token })).status,
    ).toBe(403);
    expect(
      (await h.call('GET', `/api/sandbox/tee/public-key?nonce=${n}`, { token: other.token })).status,
    ).toBe(403);
    const body = { v: 1, algorithm: 'x', key_id: '00', enc: '00', ciphertext: '00' };
    expect(
      (await h.call('POST', '/api/sandbox/tee/sealed-secrets', { token: other.token, body })).status,
    ).toBe(403);
    expect((await h.call('GET', '/api/sandbox/tee/attestation', { token: owner.token })).status).toBe(400);
    expect(
      (await h.call('GET', `/api/sandbox/tee/attestation?nonce=${n.slice(2)}`, { token: owner.token }))
        .status,
    ).toBe(400);
  });
});
