// The network-policy enforcement suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from '../testing/rig.ts';

useSuiteRuntime('runsc');
await import('./enforce.test.ts');
