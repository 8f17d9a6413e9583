#!/usr/bin/env node
// Launcher for the `agent-sandbox` CLI: registers tsx (from the workspace's root node_modules)
// in this process and runs client/src/cli/main.ts, so raw-mode terminals and Ctrl-C behave as
// in any native CLI (no child process in between).
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
await runCli(process.argv.slice(2));
