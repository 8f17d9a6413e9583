#!/usr/bin/env node
// solc-js standing in for native solc under forge (forge cannot download solc on these machines).
// Speaks the two things forge asks of a compiler: `--version`, and standard JSON on stdin.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const solc = require('solc');

const args = process.argv.slice(2);
if (args.includes('--version')) {
  process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${solc.version()}\n`);
  process.exit(0);
}

// Roots an import may be read from: --base-path, --include-path and --allow-paths, then the cwd.
const roots = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if ((a === '--base-path' || a === '--include-path') && args[i + 1]) roots.push(args[++i]);
  else if (a === '--allow-paths' && args[i + 1]) roots.push(...args[++i].split(','));
}
roots.push(process.cwd());

function findImport(p) {
  for (const root of [''].concat(roots)) {
    const file = root ? path.resolve(root, p) : path.resolve(p);
    try {
      return { contents: fs.readFileSync(file, 'utf8') };
    } catch {}
  }
  return { error: `File not found: ${p}` };
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', () => {
  process.stdout.write(solc.compile(input, { import: findImport }));
});
