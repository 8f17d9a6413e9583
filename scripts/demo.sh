#!/usr/bin/env bash
# The README's run command (`npm run demo`): installs/starts what it needs, builds the contracts,
# and brings up the local devnet, printing what it deployed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-toolchain.sh
node scripts/contracts-build.mjs
exec node_modules/.bin/tsx scripts/devnet.ts up "$@"
