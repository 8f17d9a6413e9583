// Child process for the warm-pool crash test: opens the store with a warm pool, fills it, claims
// one container for a create (or SIGKILLs itself when phase `killAt` is recorded), prints what it
// holds as one JSON line and waits to be SIGKILLed by the parent.
import { EncryptedStore } from '../../store/store.ts';
import type { SandboxRuntimeConfigInput } from '../config.ts';
import { SandboxManager } from '../manager.ts';

const arg = JSON.parse(process.argv[2] ?? '{}') as {
  storeDir: string;
  secret: string;
  config: SandboxRuntimeConfigInput;
  callId: string;
  killAt?: string;
};
const store = await EncryptedStore.open({ dir: arg.storeDir, secret: arg.secret });
const manager = await SandboxManager.open({ config: arg.config, store });
await manager.reconcile();
const pool = manager.warmPool!;
pool.refill();
await pool.settled();
const pooled = [...pool.ids()];
process.stdout.write(`${JSON.stringify({ pooled })}\n`);
const rec = await manager.create(
  { owner: '0x00000000000000000000000000000000000000cc', serviceId: 3, callId: arg.callId },
  {
    onPhase: (phase) => {
      if (phase === arg.killAt) process.kill(process.pid, 'SIGKILL');
    },
  },
);
await pool.settled();
process.stdout.write(`${JSON.stringify({ claimed: rec.id, pooled: [...pool.ids()] })}\n`);
setInterval(() => {}, 60_000);
