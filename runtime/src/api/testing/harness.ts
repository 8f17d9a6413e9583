// Test harness: the operator API over real HTTP with real session auth (PASETO, viem signatures),
// a real encrypted LevelDB store in a temp dir, the real SidecarClient and breaker, and a fake
// sidecar server. Every response body is kept so tests can assert nothing secret ever leaked.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { SessionAuth } from '../../auth/index.ts';
import { EncryptedStore } from '../../store/index.ts';
import { createOperatorApi, type OperatorApi } from '../app.ts';
import type { ApiConfigInput } from '../config.ts';
import type { OperatorApiDeps } from '../deps.ts';
import { type OperatorApiServer, serveOperatorApi } from '../serve.ts';
import { createApiSidecars } from '../sidecars.ts';
import { type FakeSidecar, startFakeSidecar } from './fake-sidecar.ts';
import { MemorySandboxes, makeRecord } from './memory-sandboxes.ts';

export const TEST_SECRET = 'a1'.repeat(32);
export const TEST_CHAIN_ID = 31337;

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  json: any;
}

export interface Harness {
  api: OperatorApi;
  server: OperatorApiServer;
  url: string;
  store: EncryptedStore;
  storeDir: string;
  sessions: SessionAuth;
  sandboxes: MemorySandboxes;
  sidecar: FakeSidecar;
  logLines: string[];
  /** Every response body and header block seen by `call`. */
  transcripts: string[];
  call(method: string, path: string, opts?: CallOpts): Promise<Reply>;
  signIn(account: PrivateKeyAccount, scope?: string): Promise<string>;
  newOwner(): Promise<{ account: PrivateKeyAccount; address: string; token: string }>;
  addSandbox(owner: string, over?: Parameters<typeof makeRecord>[1]): ReturnType<typeof makeRecord>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface CallOpts {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface HarnessOptions {
  config?: ApiConfigInput;
  mode?: OperatorApiDeps['mode'];
  deps?: Partial<OperatorApiDeps>;
  breakerThreshold?: number;
  /** Clock of the session service (expiry tests). */
  clock?: () => number;
  /** OPERATOR_PUBLIC_URL that sign-in messages name; default: the URL the server listens on. */
  publicUrl?: string;
  /** AUTH_ALLOW_LEGACY_MESSAGE. */
  allowLegacyMessage?: boolean;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const storeDir = await mkdtemp(join(tmpdir(), 'api-test-'));
  const logLines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void logLines.push(s) });
  const sandboxes = new MemorySandboxes();
  const sidecar = await startFakeSidecar();
  const transcripts: string[] = [];
  let store = await EncryptedStore.open({ dir: storeDir, secret: TEST_SECRET });
  let listenUrl = 'http://127.0.0.1';
  const openSessions = () =>
    SessionAuth.create({
      secret: TEST_SECRET,
      store,
      siwe: { publicUrl: opts.publicUrl ?? (() => listenUrl), chainId: TEST_CHAIN_ID },
      ...(opts.allowLegacyMessage ? { allowLegacyMessage: true } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  let sessions = await openSessions();

  const build = () =>
    createOperatorApi(
      {
        sessions,
        sandboxes,
        sidecars: createApiSidecars(sandboxes, {
          timeouts: { exec: 500, default: 1000 },
          breaker: { failureThreshold: opts.breakerThreshold ?? 3, cooldownMs: 30_000 },
        }),
        store,
        metrics: new Registry(),
        logger,
        mode: opts.mode ?? 'cloud',
        capabilities: { backends: ['docker'], harnesses: ['codex', 'claude'], tee: null },
        health: { runtime: () => true, store: () => true, chain: () => true },
        ...opts.deps,
      },
      opts.config,
    );
  let api = build();
  let server = await serveOperatorApi(api, { port: 0 });
  listenUrl = server.url;

  const h: Harness = {
    api,
    server,
    url: server.url,
    store,
    storeDir,
    sessions,
    sandboxes,
    sidecar,
    logLines,
    transcripts,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] = 'application/json';
      } else if (o.rawBody !== undefined) headers['content-type'] ??= 'application/json';
      const res = await fetch(`${h.url}${path}`, { method, headers, body });
      const text = await res.text();
      transcripts.push(`${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${text}`);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    async signIn(account, scope) {
      const ch = await h.call('POST', '/api/auth/challenge', { body: { address: account.address } });
      const signature = await account.signMessage({ message: ch.json.message });
      const s = await h.call('POST', '/api/auth/session', {
        body: { nonce: ch.json.nonce, address: account.address, signature, ...(scope ? { scope } : {}) },
      });
      if (s.status !== 200) throw new Error(`sign-in failed: ${s.text}`);
      return s.json.token as string;
    },
    async newOwner() {
      const account = privateKeyToAccount(generatePrivateKey());
      return { account, address: account.address.toLowerCase(), token: await h.signIn(account) };
    },
    addSandbox(owner, over) {
      const r = makeRecord(owner, over);
      sandboxes.add(r, sidecar.url);
      sidecar.tokens.add(r.token);
      return r;
    },
    async restart() {
      await server.close();
      await store.close();
      store = await EncryptedStore.open({ dir: storeDir, secret: TEST_SECRET });
      sessions = await openSessions();
      api = build();
      server = await serveOperatorApi(api, { port: 0 });
      listenUrl = server.url;
      Object.assign(h, { api, server, url: server.url, store, sessions });
      await api.recovered;
    },
    async close() {
      await server.close();
      await sidecar.close();
      await store.close();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
  return h;
}
