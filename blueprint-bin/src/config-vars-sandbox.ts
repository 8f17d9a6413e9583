// The sandbox variables (image, sizes, lifetimes, storage, network, sidecar), kept beside
// config-vars.ts and spread into its table, so the README's Configuration table lists them in order.

import { parseRuntimeList, parseShapeList } from '@agent-sandbox/runtime';
import { z } from 'zod';
import { bool, int, labels, list, num, ports, text, v } from './config-var-parsers.ts';

export const SANDBOX_VARIABLES = {
  SANDBOX_IMAGE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'the built sandbox image tag (built on first run)',
    doc: 'Image of a sandbox when a request names none',
  }),
  SANDBOX_HARNESS_IMAGE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'none',
    doc: "Image with the coding-agent CLIs (codex, claude, opencode, gemini) for requests that name no image and whose agent_identifier is one of them; 'build' builds the project's harness image at start-up (minutes the first time, then cached); empty: none",
  }),
  SANDBOX_IMAGE_ALLOWLIST: v({
    group: 'Sandboxes',
    schema: list,
    def: '',
    doc: "Other images a request may name (comma-separated); the default image is always allowed. A local name (custom:1) must be in the engine and carry our sidecar. An entry naming a registry (host[:port]/…) lets creates pull from it: registry/repo allows any tag or digest of that repository, registry/repo:tag or registry/repo@sha256:… only that one, registry/prefix/* any repository under the prefix. Registry images are pulled with the operator's login (SANDBOX_REGISTRY_AUTH_FILE), pinned by digest, and get the sidecar mounted read-only (README: images from a registry)",
  }),
  SANDBOX_REGISTRY_AUTH_FILE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: '(none: anonymous pulls)',
    doc: 'A docker config.json ({"auths":{"<host[:port]>":{"auth":"<base64 user:password>"}}}) with the operator\'s own registry logins; a user never passes credentials. Read at start; the passwords are never logged',
  }),
  SANDBOX_IMAGE_MAX_MB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '10240',
    doc: 'Largest registry image (MB): a pull whose announced layers pass it is stopped, and a pulled image whose unpacked size passes it is removed; the create fails IMAGE_TOO_LARGE',
  }),
  SANDBOX_DEFAULT_CPU_CORES: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '1',
    doc: 'CPU cores when a request asks 0 (with SANDBOX_SHAPES: the default preset, clamped to the ceiling, instead)',
  }),
  SANDBOX_DEFAULT_MEMORY_MB: v({
    group: 'Sandboxes',
    schema: int(128),
    def: '1024',
    doc: 'Memory (MB) when a request asks 0 (with SANDBOX_SHAPES: from the default preset)',
  }),
  SANDBOX_DEFAULT_DISK_GB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '10',
    doc: 'Disk (GB) when a request asks 0 (with SANDBOX_SHAPES: from the default preset)',
  }),
  SANDBOX_MAX_CPU_CORES: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '2',
    doc: 'Most CPU cores a request may ask (the ceiling: more is refused with RESOURCES_EXCEED_LIMIT)',
  }),
  SANDBOX_MAX_MEMORY_MB: v({
    group: 'Sandboxes',
    schema: int(128),
    def: '8192',
    doc: 'Most memory (MB) a request may ask',
  }),
  SANDBOX_MAX_DISK_GB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '50',
    doc: 'Most disk (GB) a request may ask',
  }),
  SANDBOX_SHAPES: v({
    group: 'Sandboxes',
    schema: z.string().transform((s, ctx) => {
      try {
        return parseShapeList(s);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    }),
    def: '',
    defaultDoc: '(empty: one preset, `default`, of SANDBOX_DEFAULT_*)',
    doc: 'Size presets a create may name (`GET /api/shapes`, `agent-sandbox shapes`): NAME:CPU_CORES:MEMORY_MB:DISK_GB, comma-separated, e.g. small:1:1024:10,medium:2:4096:20',
  }),
  SANDBOX_DEFAULT_SHAPE: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'the first of SANDBOX_SHAPES',
    doc: 'The preset a create that names no size gets, clamped to the ceiling (SANDBOX_MAX_*)',
  }),
  SANDBOX_DEFAULT_DELETE_AFTER_STOPPED: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '2592000',
    doc: 'Seconds a stopped sandbox is kept before it is deleted, when its create names none (30 days); a resume restarts the clock',
  }),
  SANDBOX_MAX_DELETE_AFTER_STOPPED: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '7776000',
    doc: 'Cap on a requested delete_after_stopped_seconds (clamped; 90 days)',
  }),
  SANDBOX_PIDS_LIMIT: v({
    group: 'Sandboxes',
    schema: int(16),
    def: '1024',
    doc: 'Process limit per sandbox',
  }),
  SANDBOX_DEFAULT_IDLE_TIMEOUT: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '1800',
    doc: 'Idle seconds before a sandbox is stopped',
  }),
  SANDBOX_DEFAULT_MAX_LIFETIME: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '86400',
    doc: 'Seconds of running before a sandbox is deleted',
  }),
  SANDBOX_MAX_IDLE_TIMEOUT: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '7200',
    doc: 'Cap on a requested idle timeout (clamped)',
  }),
  SANDBOX_MAX_MAX_LIFETIME: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '172800',
    doc: 'Cap on a requested max lifetime (clamped)',
  }),
  SANDBOX_REAPER_INTERVAL: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '30',
    doc: 'Seconds between reaper ticks (idle/lifetime)',
  }),
  SANDBOX_GC_INTERVAL: v({
    group: 'Sandboxes',
    schema: num(0.1),
    def: '3600',
    doc: 'Seconds between storage GC ticks',
  }),
  SANDBOX_GC_HOT_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '86400',
    doc: 'Seconds a stopped sandbox stays hot (container kept) before warm',
  }),
  SANDBOX_GC_WARM_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '172800',
    doc: 'Seconds warm (image + workspace tar) before cold',
  }),
  SANDBOX_GC_COLD_RETENTION: v({
    group: 'Sandboxes',
    schema: num(0),
    def: '604800',
    doc: 'Seconds cold (archives on disk) before gone',
  }),
  SANDBOX_SNAPSHOT_AUTO_COMMIT: v({
    group: 'Sandboxes',
    schema: bool,
    def: 'true',
    doc: 'Snapshot the container on every stop',
  }),
  SANDBOX_WORKSPACE_DISK: v({
    group: 'Sandboxes',
    schema: z.enum(['auto', 'loop', 'none'], { message: 'expected auto, loop or none' }),
    def: 'auto',
    doc: 'How a workspace is held to disk_gb: loop (an ext4 loop disk per workspace; root, util-linux, e2fsprogs), none (not limited), auto (loop when possible, else none with a warning); the sandbox view records it',
  }),
  SANDBOX_SNAPSHOT_MAX_MB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '20480',
    doc: 'Most snapshot storage (MB) one sandbox may hold: committed layer + workspace.tar + image.tar; a snapshot or GC demotion past it fails, nothing written',
  }),
  SANDBOX_STORAGE_BUDGET_MB: v({
    group: 'Sandboxes',
    schema: int(1),
    def: '102400',
    doc: "Operator-wide budget (MB) for all sandboxes' snapshot storage; a snapshot or GC demotion past it fails, nothing written",
  }),
  SANDBOX_MEMORY_BUDGET_MB: v({
    group: 'Sandboxes',
    schema: int(0),
    def: '0',
    doc: "Host memory budget (MB) for the memory limits of all live sandboxes together; a create past it fails MEMORY_BUDGET_EXCEEDED before anything starts, and the warm pool keeps only what it leaves. 0 = the host's memory less max(1 GiB, 10 %); set it above the host's memory to overcommit (idle sandboxes use far less than their limit)",
  }),
  SANDBOX_SNAPSHOT_DIR: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: 'DATA_DIR/snapshots',
    doc: 'Where warm/cold archives live',
  }),
  SANDBOX_WARM_POOL: v({
    group: 'Sandboxes',
    schema: int(0, 64),
    def: '0',
    doc: 'Containers of the default shape (image, cpu, memory, disk, exposed ports) kept started and healthy for creates to claim (phase `pool_claim`, no cold start); 0 = off. Never counted as sandboxes; shrinks to what OPERATOR_MAX_CAPACITY leaves; removed at shutdown and by reconcile after a crash',
  }),
  SANDBOX_HEALTH_TIMEOUT_MS: v({
    group: 'Sandboxes',
    schema: int(100, 600_000),
    def: '30000',
    doc: 'How long a new sidecar may take to answer /health',
  }),
  SANDBOX_ENGINE_CALL_TIMEOUT_MS: v({
    group: 'Sandboxes',
    schema: int(100, 600_000),
    def: '60000',
    doc: 'Deadline of each short Docker call (ping, inspect, create, start, exec create, remove); an engine that accepts and never answers fails the call with ENGINE_UNAVAILABLE. Streams (commit, save/load, archives, attach, exec start, wait) are not bounded',
  }),
  SANDBOX_ENGINE_WAIT_MS: v({
    group: 'Sandboxes',
    schema: int(0, 3_600_000),
    def: '120000',
    doc: 'How long a create waits for a lost Docker engine to return, counted from the loss, before it fails with ENGINE_UNAVAILABLE (once the engine has been gone that long, creates fail at once)',
  }),
  SANDBOX_EXTRA_LABELS: v({
    group: 'Sandboxes',
    schema: labels,
    def: '',
    doc: 'Extra Docker labels on everything created (key=value,…)',
  }),
  SANDBOX_EXPOSED_PORTS: v({
    group: 'Sandboxes',
    schema: ports,
    def: '',
    doc: 'Container ports every sandbox publishes on 127.0.0.1 for the port proxy (comma-separated)',
  }),
  SANDBOX_EGRESS: v({
    group: 'Sandboxes',
    schema: z.enum(['public', 'none', 'open'], { message: 'expected public, none or open' }),
    def: 'public',
    doc: 'Sandbox network: public (internet only; private/CGNAT/link-local/loopback addresses and the host refused; needs root and iptables), none (no interface but loopback; the sidecar answers on a Unix socket; no exposed ports), open (Docker default bridge, no isolation)',
  }),
  SANDBOX_RUNTIME: v({
    group: 'Sandboxes',
    schema: z.enum(['runc', 'runsc'], { message: 'expected runc or runsc' }),
    def: 'runc',
    doc: 'OCI runtime of a sandbox whose create names none: runc (namespaces, seccomp, capabilities on the host kernel) or runsc (gVisor: a user-space kernel between the sandbox and the host; the engine must list it: scripts/ensure-toolchain.sh registers it). runsc cannot run under SANDBOX_EGRESS=none',
  }),
  SANDBOX_RUNTIMES_ALLOWED: v({
    group: 'Sandboxes',
    schema: z.string().transform((s, ctx) => {
      try {
        return parseRuntimeList(s);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    }),
    def: '',
    doc: 'Further runtimes a create may name (capabilities_json.runtime, CLI --runtime), comma-separated: runc, runsc; the default is always offered; another is refused at create naming the offered ones',
  }),
  SANDBOX_IMPLICIT_DOMAINS: v({
    group: 'Sandboxes',
    schema: list,
    defaultDoc:
      'package registries, git hosts, container registries, CDNs, tangle.tools (runtime/src/sandbox/network-policy.ts)',
    doc: 'The implicit domains: what a sandbox with the `default` network policy reaches (and a `strict` one with include_implicit_domains), comma-separated; example.com includes its subdomains, *.example.com only them; published in /api/capabilities under network. A sandbox created without a policy reaches what SANDBOX_EGRESS allows',
  }),
  SANDBOX_DNS_UPSTREAM: v({
    group: 'Sandboxes',
    schema: list,
    defaultDoc: "the nameservers of the host's /etc/resolv.conf",
    doc: 'Where the per-sandbox resolvers of sandboxes with a network policy look up the names the policy allows (comma-separated IPv4 addresses, optionally ADDRESS#PORT). Policies need root, nftables and dnsmasq (Debian dnsmasq-base; scripts/ensure-toolchain.sh installs it); without them a create naming one is refused (NETWORK_POLICY_UNAVAILABLE)',
  }),
  SANDBOX_SOCKET_DIR: v({
    group: 'Sandboxes',
    schema: text,
    def: '/run/agent-sandbox',
    doc: 'Under SANDBOX_EGRESS=none: where each sandbox gets its 0700 sidecar socket directory (at most 57 characters, so the socket path fits a Unix socket address)',
  }),
  SIDECAR_PUBLIC_HOST: v({
    group: 'Sandboxes',
    schema: text,
    def: '127.0.0.1',
    doc: 'Host in sidecar URLs (ports are published on 127.0.0.1 only)',
  }),
  SIDECAR_HTTP_PORT: v({
    group: 'Sandboxes',
    schema: int(1, 65535),
    def: '8080',
    doc: 'Sidecar port inside the container',
  }),
} as const;
