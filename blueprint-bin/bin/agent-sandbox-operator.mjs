#!/usr/bin/env node
// Launches the operator program (src/main.ts) under tsx's loader in ONE node process, so signals
// (SIGTERM/SIGINT) reach the operator directly and its exit code is the program's.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const loader = pathToFileURL(require.resolve('tsx')).href;
const child = spawn(
  process.execPath,
  ['--import', loader, join(here, '..', 'src', 'main.ts'), ...process.argv.slice(2)],
  {
    stdio: 'inherit',
  },
);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
