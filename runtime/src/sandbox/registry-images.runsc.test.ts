// The registry-images suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./registry-images.test.ts');
