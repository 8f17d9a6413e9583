#!/usr/bin/env bash
# Installs and starts what the project needs on a machine of this kind: the Docker engine
# (Debian's docker.io), debootstrap for the sandbox image, chromium for the console's browser test,
# nftables and dnsmasq-base for per-sandbox network policies, gVisor's runsc (registered with the
# engine as the `runsc` runtime: SANDBOX_RUNTIME=runsc), and the npm dependencies (which bring
# anvil/forge/cast and solc-js). Idempotent: a second run only checks, and says what it changed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[toolchain]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[toolchain] error:\033[0m %s\n' "$*" >&2; exit 1; }

need_apt=()
command -v dockerd >/dev/null 2>&1 || need_apt+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_apt+=(debootstrap)
# Headless Chromium for the web console's browser test (console/test), driven by playwright-core.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# Per-sandbox network policies: nftables for the rules, dnsmasq (the binary only: dnsmasq-base
# starts no system service) for each policed sandbox's resolver (runtime/src/sandbox/egress-policy).
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
command -v dnsmasq >/dev/null 2>&1 || need_apt+=(dnsmasq-base)
# gVisor, for sandboxes under SANDBOX_RUNTIME=runsc (a user-space kernel between them and the host).
command -v runsc >/dev/null 2>&1 || need_apt+=(runsc)
# A registry v2 (Debian's docker-registry) that the image-pull tests start on 127.0.0.1 with their
# own config and storage (runtime/src/sandbox/registry-images.test.ts); its system service is not used.
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    die "missing ${need_apt[*]}; run as root, or install them: sudo apt-get install -y ${need_apt[*]}"
  fi
  say "installing ${need_apt[*]} from Debian's packages (once)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The engine: reuse a running one (DOCKER_HOST or the default socket), else start dockerd.
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    die "no Docker engine answers and this user cannot start one; start dockerd as root or set DOCKER_HOST"
  fi
  say "starting the Docker engine (log: /var/log/dockerd.log)"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || die "dockerd did not come up in 30 s; see /var/log/dockerd.log"
fi

# runsc as an engine runtime: daemon.json `runtimes` (every other key kept), reloaded with SIGHUP,
# never a restart (scripts/register-runsc.mjs says what it changed).
if [ "$(id -u)" = 0 ] && [ -z "${DOCKER_HOST:-}" ]; then
  node scripts/register-runsc.mjs --runsc "$(command -v runsc)"
elif ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
  say "the engine has no runsc runtime (SANDBOX_RUNTIME=runsc needs it): run this script as root on the engine's host"
fi

# npm dependencies (anvil, forge, cast, solc-js ship inside npm packages).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies"
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
fi
say "ready: $(docker version --format 'engine {{.Server.Version}}'), node $(node --version)"
