// CLI for the local devnet (`tsx devnet/main.ts --help`); the commands live in devnet/cli.ts.
import { runDevnetCli } from './cli.ts';
import { DevnetError } from './index.ts';

runDevnetCli(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof DevnetError) process.stderr.write(`[devnet] error (${err.code}): ${err.message}\n`);
    else process.stderr.write(`[devnet] error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
