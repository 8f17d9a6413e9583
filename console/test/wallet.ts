// Test-only: an EIP-1193 wallet for the browser, backed by a devnet key held in Node. The page gets
// `window.ethereum` whose requests cross to Node (Playwright's exposeFunction): accounts, chain id,
// personal_sign and eth_sendTransaction are answered with the local key; every other call goes to
// the devnet's RPC as a real wallet would forward it.
import type { BrowserContext } from 'playwright-core';
import { createWalletClient, type Hex, http, type LocalAccount } from 'viem';

export async function injectWallet(
  ctx: BrowserContext,
  account: LocalAccount,
  rpcUrl: string,
): Promise<void> {
  const wallet = createWalletClient({ account, transport: http(rpcUrl) });
  let rpcId = 0;
  const forward = async (method: string, params: unknown[]) => {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
    });
    const j = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
    if (j.error) throw Object.assign(new Error(j.error.message), { code: j.error.code });
    return j.result;
  };
  await ctx.exposeFunction('__testWallet', async (json: string) => {
    const { method, params = [] } = JSON.parse(json) as { method: string; params?: unknown[] };
    try {
      let result: unknown;
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') result = [account.address];
      else if (method === 'personal_sign')
        result = await account.signMessage({ message: { raw: params[0] as Hex } });
      else if (method === 'eth_sendTransaction') {
        const tx = params[0] as { to: Hex; data?: Hex; value?: Hex; gas?: Hex };
        result = await wallet.sendTransaction({
          chain: null,
          to: tx.to,
          ...(tx.data ? { data: tx.data } : {}),
          ...(tx.value ? { value: BigInt(tx.value) } : {}),
          ...(tx.gas ? { gas: BigInt(tx.gas) } : {}),
        });
      } else result = await forward(method, params);
      return JSON.stringify({ result });
    } catch (e) {
      return JSON.stringify({
        error: { message: (e as Error).message, code: (e as { code?: number }).code ?? -32603 },
      });
    }
  });
  await ctx.addInitScript(() => {
    const w = globalThis as unknown as { __testWallet: (s: string) => Promise<string>; ethereum: unknown };
    const bridge = w.__testWallet;
    w.ethereum = {
      isTestWallet: true,
      async request(args: { method: string; params?: unknown[] }) {
        const r = JSON.parse(await bridge(JSON.stringify(args))) as {
          result?: unknown;
          error?: { message: string; code: number };
        };
        if (r.error) throw Object.assign(new Error(r.error.message), { code: r.error.code });
        return r.result;
      },
      on() {},
      removeListener() {},
    };
  });
}
