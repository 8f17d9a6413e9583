// Test support: the owner's channel into a sidecar in TEE mode, relayed exactly as the operator
// relays it (POST /tee/channel with the operator's token). `wire` keeps every byte the relay saw.
import { ChannelClient, fromHex } from '@agent-sandbox/attestation';
import type { LocalAccount } from 'viem';

export interface RelayedChannel {
  client: ChannelClient;
  /** Every request and response byte the relay (the operator) handled, in order (unless `keepWire: false`). */
  wire: Uint8Array[];
}

export function ownerChannel(o: {
  url: string;
  operatorToken: string;
  pubkeyHex: string;
  ctx: string;
  owner: LocalAccount;
  /** false: relay as the operator API does, without keeping a copy (benches: the copy grows the heap). */
  keepWire?: boolean;
}): RelayedChannel {
  const keep = o.keepWire !== false;
  const wire: Uint8Array[] = [];
  const client = new ChannelClient({
    pubkey: fromHex(o.pubkeyHex),
    ctx: o.ctx,
    address: o.owner.address,
    signMessage: (message) => o.owner.signMessage({ message }),
    relay: async (message, type) => {
      if (keep) wire.push(message);
      const res = await fetch(`${o.url}/tee/channel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.operatorToken}`, 'content-type': type },
        body: message,
      });
      if (!keep || !res.body) return res;
      // Tee the body so the test can inspect what the relay saw.
      const [a, b] = res.body.tee();
      void (async () => {
        const r = b.getReader();
        for (;;) {
          const x = await r.read();
          if (x.done) break;
          wire.push(x.value);
        }
      })();
      return new Response(a, { status: res.status, headers: res.headers });
    },
  });
  return { client, wire };
}
