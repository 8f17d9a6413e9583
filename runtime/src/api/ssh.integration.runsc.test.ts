// The ssh.integration suite with every sandbox under gVisor (runsc).
import { useSuiteRuntime } from '../sandbox/testing/rig.ts';

useSuiteRuntime('runsc');
await import('./ssh.integration.test.ts');
