#!/usr/bin/env bash
# The README's main job (`npm run demo`): installs/starts what it needs, builds the contracts and
# the sandbox image, then scripts/demo/run.ts starts the devnet and both operators, walks one
# sandbox through its life with the `agent-sandbox` CLI and keeps everything up until Ctrl-C.
# Options go to run.ts: `npm run demo -- --exit` stops at the end; `-- --help` explains.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -t 1 ]; then bold=$'\033[1m' off=$'\033[0m'; else bold='' off=''; fi
step() { printf '\n%s━━ %s%s\n' "$bold" "$*" "$off"; }
for arg in "$@"; do
  case "$arg" in
    --help|-h) exec node --import tsx scripts/demo/run.ts --help ;;
    --exit|--no-walkthrough|--tee) ;;
    *) echo "npm run demo: unknown option '$arg' (options: --exit, --no-walkthrough, --tee, --help)" >&2; exit 2 ;;
  esac
done
started=$SECONDS

# A demo already running: its toolchain, contracts and image are in place; run.ts reuses it.
if [ -f .devnet/demo.pid ] && kill -0 "$(cat .devnet/demo.pid)" 2>/dev/null; then
  exec node --import tsx scripts/demo/run.ts "$@"
fi

step "toolchain (Docker engine, debootstrap, npm dependencies)"
bash scripts/ensure-toolchain.sh
step "contracts (forge build through solc-js + ABIs)"
node scripts/contracts-build.mjs
step "bundled programs (agent-sandbox, agent-sandbox-operator: plain JavaScript, no tsx at run time)"
node scripts/build-bins.mjs
step "sandbox image (built once, then cached by content hash)"
SANDBOX_IMAGE="$(node_modules/.bin/tsx scripts/build-image.ts)"
export SANDBOX_IMAGE
step "web console (vite build; served by the operator at /console/)"
npm run build --silent -w @agent-sandbox/console >/dev/null
echo "builds done in $((SECONDS - started)) s"
exec node --import tsx scripts/demo/run.ts "$@"
