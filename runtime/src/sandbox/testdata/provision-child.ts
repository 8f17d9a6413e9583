// Child process for the crash tests: opens the store and provisions one sandbox, either with a
// command that keeps the sidecar from answering (the parent SIGKILLs it mid-health_check) or
// killing itself with SIGKILL as soon as phase `killAt` is recorded.
import { EncryptedStore } from '../../store/store.ts';
import type { SandboxRuntimeConfigInput } from '../config.ts';
import { SandboxManager } from '../manager.ts';

const arg = JSON.parse(process.argv[2] ?? '{}') as {
  storeDir: string;
  secret: string;
  config: SandboxRuntimeConfigInput;
  callId: string;
  cmd?: string[];
  killAt?: string;
  /** Extra create parameters (e.g. fromSandbox for the crash-mid-branch test). */
  params?: Record<string, unknown>;
};
const store = await EncryptedStore.open({ dir: arg.storeDir, secret: arg.secret });
const manager = await SandboxManager.open({ config: arg.config, store });
process.stdout.write('provisioning\n');
await manager.create(
  { owner: '0x00000000000000000000000000000000000000cc', serviceId: 3, callId: arg.callId, ...arg.params },
  {
    ...(arg.cmd ? { cmd: arg.cmd } : {}),
    onPhase: (phase) => {
      if (phase === arg.killAt) process.kill(process.pid, 'SIGKILL');
    },
  },
);
process.stdout.write('done\n');
