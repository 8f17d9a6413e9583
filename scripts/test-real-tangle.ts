// `npm run test:real-tangle`: a stated subset of the suite against tnt-core 0.19's real contracts.
// anvil starts from a saved tnt-core deployment (its own script/LocalTestnet.s.sol, made by the
// user: this repository never builds tnt-core) and our blueprint goes on top with the role tools.
// Not part of `npm test` / CI, which keep the stand-in LocalTangle.
import { spawnSync } from 'node:child_process';
import {
  DevnetError,
  readRealTangleFiles,
  TANGLE_DEPLOYMENT_ENV,
  TANGLE_STATE_ENV,
} from '@agent-sandbox/devnet';
import { REAL_TANGLE_TESTS } from '../vitest.real-tangle.config.ts';

const HELP = `Usage: npm run test:real-tangle -- --tangle-state FILE --tangle-deployment FILE [vitest args]

Runs these test files on tnt-core 0.19's real Tangle instead of the stand-in LocalTangle:
${REAL_TANGLE_TESTS.map((f) => `  ${f}`).join('\n')}
(cloud create → exec → delete and kill -9 restarts; an instance service requested, approved by its
operator, provisioned, used and terminated; refusals by name, ManagerReverted unwrapped; the role
tools: stake in MultiAssetDelegation, register, requests list/approve/reject, unregister,
deploy-blueprint; creates sent with exactly their gas estimate; the conformance table's devnet
case; the demo's instance walk). Extra arguments go to vitest (e.g. a file of the list, or -t NAME).

  --tangle-state FILE       anvil state holding tnt-core's deployment (env ${TANGLE_STATE_ENV})
  --tangle-deployment FILE  JSON naming its Tangle and MultiAssetDelegation (env ${TANGLE_DEPLOYMENT_ENV})
  -h, --help                this text

Needs what \`npm test\` needs (Docker, the sandbox image, forge output). Exit: vitest's; 2 when the
two files are missing or wrong (the message says how to make them).`;

// Our two flags and --help are taken out; everything else goes to vitest as given (-t NAME too).
type Ours = 'tangle-state' | 'tangle-deployment';
const ours = new Set<string>(['tangle-state', 'tangle-deployment']);
const values: Partial<Record<Ours, string>> & { help?: boolean } = {};
const positionals: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const [flag, inline] = a.startsWith('--') ? a.slice(2).split(/=(.*)/s, 2) : [undefined, undefined];
  if (a === '-h' || a === '--help') values.help = true;
  else if (flag && ours.has(flag)) {
    const v = inline ?? argv[++i];
    if (v === undefined) {
      process.stderr.write(`test:real-tangle: --${flag} needs a FILE\n\n${HELP}\n`);
      process.exit(2);
    }
    values[flag as Ours] = v;
  } else positionals.push(a);
}
let files: { stateFile: string; deploymentFile: string };
try {
  files = readRealTangleFiles(
    {
      stateFile: values['tangle-state'] ?? process.env[TANGLE_STATE_ENV],
      deploymentFile: values['tangle-deployment'] ?? process.env[TANGLE_DEPLOYMENT_ENV],
    },
    { required: true },
  ).files;
} catch (err) {
  if (!(err instanceof DevnetError)) throw err;
  process.stderr.write(`test:real-tangle: ${err.message}\n\n${HELP}\n`);
  process.exit(2);
}
process.stderr.write(`test:real-tangle: tnt-core state ${files.stateFile}\n`);
const r = spawnSync(
  'node_modules/.bin/vitest',
  ['run', '-c', 'vitest.real-tangle.config.ts', ...positionals],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      [TANGLE_STATE_ENV]: files.stateFile,
      [TANGLE_DEPLOYMENT_ENV]: files.deploymentFile,
    },
  },
);
process.exit(r.status ?? 1);
