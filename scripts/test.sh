#!/usr/bin/env bash
# The README's test command (`npm test`): installs/starts what it needs, then runs every test —
# forge's Solidity tests, the type check and linter, and vitest (unit, devnet, real-container and
# end-to-end tests), then the serial vitest tests alone. Ends with one line "tests: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

step "toolchain"
bash scripts/ensure-toolchain.sh

step "contracts: build and generate ABIs"
node scripts/contracts-build.mjs

step "bundled programs (agent-sandbox, agent-sandbox-operator)"
node scripts/build-bins.mjs

step "contracts: forge test"
# The npm shim (node_modules/.bin/forge) always exits 0; run the platform binary it wraps.
forge_bin=$(ls node_modules/@foundry-rs/forge-*/bin/forge 2>/dev/null | head -n1)
[ -x "$forge_bin" ] || { echo "forge binary not found under node_modules/@foundry-rs/" >&2; exit 1; }
forge_log=$(mktemp)
set +e
"$forge_bin" test 2>&1 | tee "$forge_log"
forge_rc=${PIPESTATUS[0]}
set -e
forge_line=$(grep -E 'tests passed, [0-9]+ failed' "$forge_log" | tail -1 || true)
forge_pass=$(sed -nE 's/.* ([0-9]+) tests passed.*/\1/p' <<<"$forge_line"); forge_pass=${forge_pass:-0}
forge_fail=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$forge_line"); forge_fail=${forge_fail:-0}

if [ -f scripts/build-image.ts ]; then
  step "sandbox image (built once; skipped when the content hash is already tagged)"
  node_modules/.bin/tsx scripts/build-image.ts
  step "harness image (the four agent CLIs on Node 24; built once, then only its sidecar layer)"
  node_modules/.bin/tsx scripts/build-image.ts --with-harnesses
fi

step "web console (vite build; served by the operator at /console/)"
npm run build --silent -w @agent-sandbox/console >/dev/null

step "typecheck and lint"
node_modules/.bin/tsc -p tsconfig.json --noEmit
node_modules/.bin/biome check . --diagnostic-level=error

step "vitest"
vt_json=$(mktemp)
set +e
node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json="$vt_json"
vt_rc=$?
set -e
read -r vt_pass vt_fail < <(node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(r.numPassedTests, r.numFailedTests + (r.numFailedTestSuites || 0));
' "$vt_json" 2>/dev/null || echo "0 1")

step "vitest serial (alone: restarts the Docker engine)"
vs_json=$(mktemp)
set +e
node_modules/.bin/vitest run --config vitest.serial.config.ts --reporter=default --reporter=json --outputFile.json="$vs_json"
vs_rc=$?
set -e
read -r vs_pass vs_fail < <(node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(r.numPassedTests, r.numFailedTests + (r.numFailedTestSuites || 0));
' "$vs_json" 2>/dev/null || echo "0 1")
vt_pass=$((vt_pass + vs_pass))
vt_fail=$((vt_fail + vs_fail))

echo
echo "forge: ${forge_pass} passed, ${forge_fail} failed"
echo "vitest: ${vt_pass} passed, ${vt_fail} failed"
echo "tests: $((forge_pass + vt_pass)) passed, $((forge_fail + vt_fail)) failed"
[ "$forge_rc" = 0 ] && [ "$vt_rc" = 0 ] && [ "$vs_rc" = 0 ] && [ "$forge_fail" = 0 ] && [ "$forge_pass" -gt 0 ]
