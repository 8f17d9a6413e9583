// The hostile-neighbour suite with every sandbox under gVisor (runsc). Serial, like the suite.
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./hostile-neighbour-network.serial-test.ts');
