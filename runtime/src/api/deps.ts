// The narrow interfaces the operator API needs from auth, store, sandbox and sidecar modules, so the
// app is built from whatever implements them (the real runtime modules, or a test fixture).

import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { SandboxRecord } from '../sandbox/record.ts';
import type { ShapeCatalog } from '../sandbox/shapes.ts';
import type { SshKey } from '../sandbox/ssh-keys.ts';
import type { SidecarClient } from '../sidecar-client/index.ts';
import type { EncryptedStore } from '../store/index.ts';
import type { WorkflowRecord } from '../workflows/records.ts';
import type { ApiConfigInput } from './config.ts';

export type Awaitable<T> = T | Promise<T>;

/** Wallet sign-in and PASETO sessions (runtime/src/auth). */
export interface ApiSessions {
  /** With `address`: an EIP-4361 message naming it; without: the legacy message, if allowed. */
  createChallenge(input: { address?: string }): Awaitable<{
    nonce: string;
    message: string;
    issued_at: number | string;
    expires_at: number | string;
  }>;
  createSession(input: {
    nonce?: string;
    /** The signed message, unchanged (instead of, or with, nonce). */
    message?: string;
    signature: string;
    scope?: string;
    /** When given, the recovered signer must be this address. */
    address?: string;
  }): Awaitable<{ token: string; address: string; expires_at: number | string }>;
  /** Throws (any error) when the token is invalid, expired, revoked or minted under another key. */
  verify(token: string): Awaitable<SessionClaims>;
  revoke(token: string): Awaitable<unknown>;
  /** True while the session with this id is live (not revoked, not expired): previews end with it. */
  isActive(jti: string): boolean;
}

export interface SessionClaims {
  address: string;
  scope?: string | null | undefined;
  exp?: string | number | undefined;
  /** The session's id (SessionAuth sets it): what a preview credential is tied to. */
  jti?: string | undefined;
}

/** The encrypted store (runtime/src/store): runs and their events persist there. */
export type ApiStore = Pick<EncryptedStore, 'collection'>;

/** Provision progress of a create job, as recorded by the sandbox manager. */
export interface ProvisionView {
  [key: string]: unknown;
}

/** What the routes need from the sandbox manager (runtime/src/sandbox). */
export interface ApiSandboxes {
  get(id: string): Awaitable<SandboxRecord | undefined | null>;
  /** Non-deleted sandboxes `owner` owns, or (with `member`) that wallet is a member of. */
  list(filter: { owner: string } | { member: string }): Awaitable<SandboxRecord[]>;
  /** Team access: lets the wallet use the sandbox (idempotent); the updated record. */
  addMember(id: string, address: string): Awaitable<SandboxRecord>;
  /** NOT_FOUND when the wallet is not a member; the updated record. */
  removeMember(id: string, address: string): Awaitable<SandboxRecord>;
  /** SSH: lets the public key in (idempotent); the key as stored and the updated record. */
  addSshKey(id: string, publicKey: string): Awaitable<{ key: SshKey; record: SandboxRecord }>;
  /** NOT_FOUND when the sandbox does not have the key (a fingerprint or a .pub line). */
  removeSshKey(id: string, which: string): Awaitable<SandboxRecord>;
  stop(id: string): Awaitable<unknown>;
  resume(id: string): Awaitable<unknown>;
  snapshot(id: string): Awaitable<unknown>;
  injectSecrets(id: string, env: Record<string, string>): Awaitable<unknown>;
  wipeSecrets(id: string): Awaitable<unknown>;
  /** Counts as activity for the idle timer. */
  touch(id: string): Awaitable<unknown>;
  getProvision(callId: string): Awaitable<ProvisionView | undefined | null>;
  /**
   * Host port on 127.0.0.1 where a container port the sandbox exposed is published (a number, or
   * SandboxManager's `{ host, port }`); null or a NOT_FOUND throw when the sandbox does not expose
   * it. Optional: without it the port proxy answers 404.
   */
  exposedPort?(id: string, containerPort: number): Awaitable<number | { port: number } | null | undefined>;
  /**
   * Where the sandbox's sidecar listens (loopback URL, or with socketPath a Unix socket: the
   * sandbox has no network) and its bearer token; `startedAt`, when its current running interval
   * began (create, resume, a restart of a dead container): a new one starts with a closed breaker.
   */
  sidecarEndpoint(
    id: string,
  ): Awaitable<{ url: string; token: string; socketPath?: string; startedAt?: number }>;
}

/** The calls the routes make on one sandbox's sidecar (the real SidecarClient implements them). */
export type ApiSidecarClient = Pick<
  SidecarClient,
  | 'exec'
  | 'streamAgent'
  | 'cancelAgent'
  | 'listAgents'
  | 'createTerminal'
  | 'listTerminals'
  | 'getTerminal'
  | 'resizeTerminal'
  | 'deleteTerminal'
  | 'terminalInput'
  | 'streamTerminal'
  | 'readFile'
  | 'writeFile'
  | 'listFiles'
>;

/**
 * A sidecar client for a sandbox, addressed by id. Clients own the per-sandbox circuit breaker and
 * per-operation timeouts and throw RuntimeError (SIDECAR_TIMEOUT, CIRCUIT_OPEN, SIDECAR_ERROR, ...).
 */
export interface ApiSidecars {
  client(sandboxId: string): Promise<ApiSidecarClient>;
}

/** TEE routes (tee-instance mode only); absent elsewhere. */
export interface ApiTee {
  /** Evidence over report_data binding (context, sealing key, nonce); nonce is 32 bytes hex. */
  attestation(sandboxId: string, nonce: string): Awaitable<unknown>;
  publicKey(sandboxId: string, nonce: string): Awaitable<unknown>;
  sealedSecrets(sandboxId: string, body: unknown): Awaitable<unknown>;
  /** Relays an owner-channel message (opaque bytes) to the enclave; its sealed answer streams back. */
  channel(sandboxId: string, message: Uint8Array): Awaitable<Response>;
}

export type HealthCheck = () => Awaitable<unknown>;

/** What /health shows of an instance's one sandbox (blueprint-lib's InstanceSupervisor.status()). */
export interface InstanceHealth {
  state: string;
  sandboxId: string | null;
  failures: number;
  lastError: string | null;
  nextAttemptAt: number | null;
  reportedOnChain: boolean;
}

/**
 * What /health shows of the operator's job feed from the chain (blueprint-lib's chainFeedHealth
 * builds it from the job runner's status): the RPC unreachable since when, or a reorg being
 * recovered from (fork point, rescan progress). Public: counts only, never call ids or RPC errors.
 */
export interface ChainFeedHealth {
  state: 'ok' | 'unreachable' | 'recovering';
  /** One line for a person: "chain unreachable since 2026-…Z", "recovering from a reorg …". */
  message: string;
  /** Epoch ms since the RPC fails, while it does. */
  unreachableSince?: number;
  lastReorg?: {
    at: number;
    fork: string;
    oldHead: string;
    scannedTo: string;
    vanished: number;
    resent: number;
    recovering: boolean;
  };
}

/**
 * What /health shows of the Docker engine (the runtime's engine watch): reachable or not, lost since
 * when, and how far the adoption of the sandboxes after it returned got. Public: counts and times
 * only, never sandbox ids or the socket error.
 */
export interface EngineHealth {
  state: 'up' | 'down' | 'adopting';
  message?: string | undefined;
  downSince?: number | undefined;
  losses: number;
  adoption?: { total: number; adopted: number; failed: number } | undefined;
  lastOutage?: { downSince: number; backAt: number; adoptedAt: number } | undefined;
}

export type OperatorMode = 'cloud' | 'instance' | 'tee-instance';

export interface OperatorApiDeps {
  sessions: ApiSessions;
  sandboxes: ApiSandboxes;
  /** Default: SidecarClients built from sandboxes.sidecarEndpoint, sharing one circuit breaker. */
  sidecars?: ApiSidecars;
  store: ApiStore;
  metrics: Registry;
  logger: Logger;
  mode: OperatorMode;
  /**
   * The sandbox a workflow runs in (the operator resolves instance targets; the runtime knows no
   * service). Default: the workflow's target sandbox id.
   */
  workflowSandbox?: (w: WorkflowRecord) => string | undefined;
  /** Required in instance modes: the one sandbox `/api/sandbox/…` addresses. */
  instanceSandboxId?: string | (() => string | undefined);
  /** Public capability document (backends, harnesses, TEE); `mode` is added by the API. */
  capabilities: Record<string, unknown>;
  /** Size presets, default and ceiling served at GET /api/shapes (absent: the route is not mounted). */
  shapes?: ShapeCatalog;
  /** Each check throws or returns false when unhealthy. `chain` is injected: runtime knows no chain. */
  health?: { runtime?: HealthCheck; store?: HealthCheck; chain?: HealthCheck };
  /** False until the operator has reconciled and can take work. */
  ready?: () => boolean;
  /** Instance modes: the instance keeper's status, shown by /health (degraded while `failed`). */
  instance?: () => InstanceHealth | undefined;
  /** The job feed's chain status, shown by /health (degraded unless `ok`). */
  chainFeed?: () => ChainFeedHealth | undefined;
  /** The Docker engine's status, shown by /health (degraded unless `up`). */
  engine?: () => EngineHealth | undefined;
  tee?: ApiTee;
  config?: ApiConfigInput;
  /** The web console's build output (console/dist), served at /console/; absent: a 503 saying how to build it. */
  consoleDir?: string;
}
