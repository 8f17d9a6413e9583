// The hostile-user-env suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./hostile-user-env.test.ts');
