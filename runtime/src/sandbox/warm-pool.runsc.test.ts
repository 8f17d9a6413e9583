// The warm-pool suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./warm-pool.test.ts');
