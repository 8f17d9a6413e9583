// Test-only: signs in to a running operator API over HTTP as a real client would (EIP-4361
// challenge for the account's address, signed, redeemed for a session token).
import type { PrivateKeyAccount } from 'viem/accounts';

export async function signInOverHttp(baseUrl: string, account: PrivateKeyAccount): Promise<string> {
  const post = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const ch = (await (await post('/api/auth/challenge', { address: account.address })).json()) as {
    nonce: string;
    message: string;
  };
  const s = await post('/api/auth/session', {
    nonce: ch.nonce,
    address: account.address,
    signature: await account.signMessage({ message: ch.message }),
  });
  return ((await s.json()) as { token: string }).token;
}
