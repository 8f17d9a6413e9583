// The network-policy enforcement suite with every sandbox under gVisor (runsc). In the serial
// stage, not beside enforce.test.ts: gVisor sandboxes start slower, and beside the runc file at
// high load four cases hit the 20 s health bound; run side by side they also found the stale
// neighbour entry bug (neighbour.serial-test.ts).
import { useSuiteRuntime } from '../testing/rig.ts';

useSuiteRuntime('runsc');
await import('./enforce.test.ts');
