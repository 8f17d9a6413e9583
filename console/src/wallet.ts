// The wallet: any EIP-1193 provider the browser injects (window.ethereum), used through viem for
// accounts, EIP-4361 sign-in signatures and (chain.ts) job transactions.
import { type Address, createWalletClient, custom, type EIP1193Provider } from 'viem';

export function injected(): EIP1193Provider {
  const p = (globalThis as { ethereum?: EIP1193Provider }).ethereum;
  if (!p)
    throw new Error(
      'no wallet found: install or enable a browser wallet (an EIP-1193 provider), then reload',
    );
  return p;
}

export async function connect(): Promise<Address> {
  const [address] = await createWalletClient({ transport: custom(injected()) }).requestAddresses();
  if (!address) throw new Error('the wallet shared no account; unlock it and try again');
  return address;
}

export function signMessage(address: Address, message: string): Promise<`0x${string}`> {
  return createWalletClient({ account: address, transport: custom(injected()) }).signMessage({ message });
}
