// The `agent-sandbox` program as bundled into client/dist/cli.mjs (scripts/build-bins.mjs): runs
// the CLI on this process's argv. bin/agent-sandbox.mjs is the same entry under tsx, for tests.
import { enableCompileCache } from './compile-cache.ts';

enableCompileCache();
// Imported after the cache is on, so the chunks a command loads are compiled once, then read back.
const { runCli } = await import('./main.ts');
await runCli(process.argv.slice(2));
