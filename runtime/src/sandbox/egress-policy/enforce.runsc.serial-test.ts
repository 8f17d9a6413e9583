// The network-policy enforcement suite with every sandbox under gVisor (runsc). In the serial
// stage, not beside enforce.test.ts: run in parallel, a gVisor sandbox that is handed an IP the
// other file's sandbox just gave up is unreachable from the host until the host's neighbour entry
// (the old sandbox's MAC; policed sandboxes have MACs of their own) ages out, up to ~30 s — a
// product bug found by running them side by side, still open (the README's network-policy
// section says so).
import { useSuiteRuntime } from '../testing/rig.ts';

useSuiteRuntime('runsc');
await import('./enforce.test.ts');
