// The workspace-disk suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from './testing/rig.ts';

useSuiteRuntime('runsc');
await import('./workspace-disk.test.ts');
