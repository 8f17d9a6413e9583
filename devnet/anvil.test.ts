// anvil's process: started on a free port, stopped for good, and a taken port refused by name.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { anvilBinary, DEVNET_CHAIN_ID, freePort, rpcChainId, startAnvil } from './anvil.ts';
import { DevnetError } from './errors.ts';

describe('anvil', () => {
  it('runs the native binary, not the node wrapper (one process to stop)', () => {
    expect(anvilBinary()).toMatch(/@foundry-rs\/anvil-[^/]+\/bin\/anvil$/);
  });

  it('starts on a free port with chain id 31337 and is gone after stop()', async () => {
    const anvil = await startAnvil({ port: 0 });
    expect(await rpcChainId(anvil.rpcUrl)).toBe(DEVNET_CHAIN_ID);
    expect(anvil.wsUrl).toBe(anvil.rpcUrl.replace('http://', 'ws://'));
    await anvil.stop();
    await anvil.exited;
    expect(await rpcChainId(anvil.rpcUrl, 300)).toBeUndefined();
  });

  it('refuses a port another program holds, with PORT_IN_USE', async () => {
    const port = await freePort();
    const holder = createServer((s) => s.destroy());
    await new Promise<void>((r) => holder.listen(port, '127.0.0.1', () => r()));
    try {
      const err = await startAnvil({ port }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DevnetError);
      expect((err as DevnetError).code).toBe('PORT_IN_USE');
      expect((err as Error).message).toContain(`port ${port}`);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  });
});
