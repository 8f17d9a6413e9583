// The secrets-at-rest suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./secrets-at-rest.test.ts');
