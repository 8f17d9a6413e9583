// Child process for the crash test: opens the store and provisions one sandbox with a command
// that keeps the sidecar from answering for a while, so the parent can SIGKILL it mid-health_check.
import { EncryptedStore } from '../../store/store.ts';
import type { SandboxRuntimeConfigInput } from '../config.ts';
import { SandboxManager } from '../manager.ts';

const arg = JSON.parse(process.argv[2] ?? '{}') as {
  storeDir: string;
  secret: string;
  config: SandboxRuntimeConfigInput;
  callId: string;
  cmd: string[];
};
const store = await EncryptedStore.open({ dir: arg.storeDir, secret: arg.secret });
const manager = await SandboxManager.open({ config: arg.config, store });
process.stdout.write('provisioning\n');
await manager.create(
  { owner: '0x00000000000000000000000000000000000000cc', serviceId: 3, callId: arg.callId },
  { cmd: arg.cmd },
);
process.stdout.write('done\n');
