// The owner channel as a malicious relay (the operator) would attack it: it holds every byte, can
// reorder, drop, cut, replay and splice, and can sign with its own wallet. None of it opens a
// request, forges a response or gets an order past the enclave's owner check.
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { contextString } from './binding.ts';
import { concatBytes, toHex, utf8 } from './bytes.ts';
import { decapsulateRequest, encapsulateRequest } from './channel.ts';
import { ChannelEndpoint, ownerChannelMessage } from './channel-owner.ts';
import { generateKeyPair } from './hpke.ts';

const ownerAcct = privateKeyToAccount(`0x${'11'.repeat(32)}`);
const operatorAcct = privateKeyToAccount(`0x${'22'.repeat(32)}`);
const ctx = contextString({
  chainId: 31337,
  serviceId: 4,
  sandboxId: 'sbx-a',
  operator: operatorAcct.address,
  owner: ownerAcct.address,
});
const kp = generateKeyPair();

const inner = async (acct = ownerAcct, over: Record<string, unknown> = {}, c = ctx, pk = kp.publicKey) => {
  const message = ownerChannelMessage({ ctx: c, pubkey: pk, address: acct.address });
  return {
    v: 1,
    ts: Date.now(),
    auth: { message, signature: await acct.signMessage({ message }) },
    method: 'POST',
    path: '/terminals/commands',
    body: JSON.stringify({ command: 'echo top-secret-command' }),
    ...over,
  };
};
const enc = (o: unknown) => encapsulateRequest(kp.publicKey, utf8(JSON.stringify(o)));

describe('owner channel (OHTTP-shaped, chunked responses)', () => {
  it('round-trips a request and a chunked response; the relay sees neither in the clear', async () => {
    const ep = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
    const { message, opener } = enc(await inner());
    expect(Buffer.from(message).toString('latin1')).not.toContain('top-secret-command');
    const opened = ep.decapsulate(message);
    const req = await ep.accept(opened);
    expect(req.body).toContain('top-secret-command');
    const wire = concatBytes(
      opened.sealer.head,
      opened.sealer.chunk(utf8('{"status":200}')),
      opened.sealer.chunk(utf8('secret-output')),
      opened.sealer.chunk(utf8(''), true),
    );
    expect(Buffer.from(wire).toString('latin1')).not.toContain('secret-output');
    // Fed in odd slices, as a network delivers it.
    const got: string[] = [];
    for (let i = 0; i < wire.length; i += 7) {
      for (const c of opener.feed(wire.subarray(i, i + 7))) got.push(new TextDecoder().decode(c));
    }
    opener.end();
    expect(got).toEqual(['{"status":200}', 'secret-output', '']);
  });

  it('refuses reordered, dropped, cut, extended and tampered response chunks', async () => {
    const ep = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
    const setup = async () => {
      const { message, opener } = enc(await inner());
      const { sealer } = ep.decapsulate(message);
      const a = sealer.chunk(utf8('a'));
      const b = sealer.chunk(utf8('b'));
      const f = sealer.chunk(utf8('f'), true);
      return { opener, head: sealer.head, a, b, f };
    };
    let s = await setup();
    expect(() => s.opener.feed(concatBytes(s.head, s.b, s.a))).toThrow(/does not open/);
    s = await setup();
    expect(() => s.opener.feed(concatBytes(s.head, s.a, s.f))).toThrow(/does not open/);
    s = await setup();
    s.opener.feed(concatBytes(s.head, s.a, s.b));
    expect(() => s.opener.end()).toThrow(/cut it short/);
    s = await setup();
    expect(() => s.opener.feed(concatBytes(s.head, s.a, s.b, s.f, s.a))).toThrow();
    s = await setup();
    const t = s.b.slice();
    t[6]! ^= 1;
    expect(() => s.opener.feed(concatBytes(s.head, s.a, t))).toThrow(/does not open/);
    // A chunk from another response (another request's keys) does not open here either.
    const other = await setup();
    s = await setup();
    expect(() => s.opener.feed(concatBytes(s.head, s.a, other.b))).toThrow(/does not open/);
  });

  it('refuses a tampered, replayed or stale request, and one for another key', async () => {
    const ep = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
    const { message } = enc(await inner());
    const flipped = message.slice();
    flipped[60]! ^= 1;
    expect(() => ep.decapsulate(flipped)).toThrow(/does not open/);
    await ep.accept(ep.decapsulate(message));
    await expect(ep.accept(ep.decapsulate(message))).rejects.toThrow(/replay/);
    const stale = enc(await inner(ownerAcct, { ts: Date.now() - 10 * 60_000 }));
    await expect(ep.accept(ep.decapsulate(stale.message))).rejects.toThrow(/stale/);
    const otherKey = generateKeyPair();
    const forOther = encapsulateRequest(otherKey.publicKey, utf8('{}'));
    expect(() => ep.decapsulate(forOther.message)).toThrow(/another key|does not open/);
    expect(() => decapsulateRequest(otherKey.secretKey, kp.publicKey, message)).toThrow();
  });

  it('remembers a used request for its whole window: after newer ones, expired ones and a clock stepped back', async () => {
    const ep = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
    const t = Date.now();
    const at = async (ts: number) => enc(await inner(ownerAcct, { ts })).message;
    const first = await at(t);
    await ep.accept(ep.decapsulate(first), t);
    // The clock steps back a minute; the next request expires before the first one does.
    const earlier = await at(t - 60_000);
    await ep.accept(ep.decapsulate(earlier), t - 60_000);
    for (let k = 1; k <= 5; k++) {
      const m = await at(t + k * 1000);
      await ep.accept(ep.decapsulate(m), t + k * 1000);
    }
    // 190 s on: `earlier` (kept until t+180 s) is expired, everything else is live. Each replay
    // whose ts is still inside the window must be refused as a replay, not taken.
    const now = t + 190_000;
    await expect(ep.accept(ep.decapsulate(first), t + 100_000)).rejects.toThrow(/replay/);
    await expect(ep.accept(ep.decapsulate(await at(now)), now)).resolves.toBeDefined();
    await expect(ep.accept(ep.decapsulate(first), t + 110_000)).rejects.toThrow(/replay/);
    await expect(ep.accept(ep.decapsulate(earlier), t + 50_000)).rejects.toThrow(/replay/);
  });

  it('takes orders only from the owner the context names, for this key and context', async () => {
    const ep = new ChannelEndpoint(kp.secretKey, kp.publicKey, ctx);
    const run = async (o: Record<string, unknown>) => ep.accept(ep.decapsulate(enc(o).message));
    // The operator signing with its own wallet.
    await expect(run(await inner(operatorAcct))).rejects.toThrow(/not signed for this enclave by its owner/);
    // The owner's message, but the operator's signature over it.
    const good = await inner();
    const forged = {
      ...good,
      auth: { ...good.auth, signature: await operatorAcct.signMessage({ message: good.auth.message }) },
    };
    await expect(run(forged)).rejects.toThrow(/not the owner/);
    // A session signed for another enclave key, or another context (sandbox), is not this one's.
    await expect(run(await inner(ownerAcct, {}, ctx, generateKeyPair().publicKey))).rejects.toThrow(/owner/);
    const otherCtx = contextString({
      chainId: 31337,
      serviceId: 4,
      sandboxId: 'sbx-b',
      operator: operatorAcct.address,
      owner: ownerAcct.address,
    });
    await expect(run(await inner(ownerAcct, {}, otherCtx))).rejects.toThrow(/owner/);
    // No auth at all, or garbage inside.
    await expect(run({ ...good, auth: { message: 'x', signature: '0x00' } })).rejects.toThrow();
    await expect(run({ hello: 1 })).rejects.toThrow(/not a v1 channel request/);
    expect(toHex(kp.publicKey)).toHaveLength(64);
  });
});
