// The `agent-sandbox` program as bundled into client/dist/cli.mjs (scripts/build-bins.mjs): runs
// the CLI on this process's argv. bin/agent-sandbox.mjs is the same entry under tsx, for tests.
import { runCli } from './main.ts';

await runCli(process.argv.slice(2));
