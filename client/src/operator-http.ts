// The transport under OperatorClient: fetch with a timeout, wallet sign-in (EIP-4361 challenge,
// checked to name this operator before it is signed → PASETO session), one re-login on 401, the
// API's error shape turned into ClientError, and SSE.
import { z } from 'zod';
import { ApiErrorBody, Challenge, Session } from './api-types.ts';
import { ClientError, hintFor } from './errors.ts';
import { readSse, type SseEvent } from './sse.ts';

/** What sign-in needs from a wallet: viem's LocalAccount (or any account that can personal_sign). */
export interface SigningAccount {
  address: `0x${string}`;
  signMessage: (args: { message: string }) => Promise<`0x${string}`>;
}

export interface OperatorHttpOptions {
  /** The operator API's base URL, e.g. `http://127.0.0.1:9090`. */
  baseUrl: string;
  /** Signs the challenge; without it the client can only use `token` and cannot re-login. */
  account?: SigningAccount;
  /** A session token from an earlier login (e.g. the CLI's cache). */
  token?: string;
  /** When the cached token expires (unix seconds), so the client re-logs in before using it. */
  tokenExpiresAt?: number;
  /** Called after each successful login, e.g. to cache the session. */
  onSession?: (session: Session & { expiresAt: number | undefined }) => void | Promise<void>;
  fetch?: typeof fetch;
  /** Per-request timeout for non-streaming calls. Default 130 s (the API's own limit is 120 s). */
  timeoutMs?: number;
  /**
   * When known, the chain id the sign-in message must name (else any chain is accepted); a
   * function is asked once, at the first sign-in (e.g. an RPC's eth_chainId).
   */
  chainId?: number | (() => Promise<number | undefined>);
}

export interface RequestOptions {
  body?: unknown;
  /** Opaque bytes instead of a JSON body (the TEE owner channel's encapsulated messages). */
  raw?: { bytes: Uint8Array; type: string };
  /** Public routes send no Authorization header. */
  auth?: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export function parseExpiry(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v > 1e12 ? Math.floor(v / 1000) : v;
  if (typeof v === 'string') {
    if (/^\d+$/.test(v)) return parseExpiry(Number(v));
    const ms = Date.parse(v);
    if (!Number.isNaN(ms)) return Math.floor(ms / 1000);
  }
  return undefined;
}

export class OperatorHttp {
  readonly baseUrl: string;
  private readonly account: SigningAccount | undefined;
  private readonly doFetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly onSession: OperatorHttpOptions['onSession'];
  private chainId: OperatorHttpOptions['chainId'];
  private token: string | undefined;
  private tokenExpiresAt: number | undefined;
  private loggingIn: Promise<Session> | undefined;

  constructor(options: OperatorHttpOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new ClientError(
        'USAGE',
        `operator URL "${options.baseUrl}" is not a URL; pass e.g. http://127.0.0.1:9090`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ClientError('USAGE', `operator URL must be http(s), got ${url.protocol}`);
    }
    this.baseUrl = url.toString().replace(/\/+$/, '');
    this.account = options.account;
    this.token = options.token;
    this.tokenExpiresAt = options.tokenExpiresAt;
    this.onSession = options.onSession;
    this.doFetch = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 130_000;
    this.chainId = options.chainId;
  }

  get address(): `0x${string}` | undefined {
    return this.account?.address;
  }

  get hasSession(): boolean {
    return this.token !== undefined;
  }

  /** Holds a session or can get one (an account to sign in with). */
  get canSignIn(): boolean {
    return this.token !== undefined || this.account !== undefined;
  }

  /** The bearer token of the current session (a credential: do not log or print it). */
  get sessionToken(): string | undefined {
    return this.token;
  }

  /** Challenge → personal_sign → session. Concurrent callers share one sign-in. */
  login(): Promise<Session> {
    this.loggingIn ??= this.doLogin().finally(() => {
      this.loggingIn = undefined;
    });
    return this.loggingIn;
  }

  private async doLogin(): Promise<Session> {
    const account = this.account;
    if (!account) {
      throw new ClientError(
        'UNAUTHORIZED',
        'no valid session and no key to sign in with; run `agent-sandbox login` (or pass --private-key/--keystore)',
      );
    }
    const challenge = await this.json('POST', '/api/auth/challenge', Challenge, {
      auth: false,
      body: { address: account.address },
    });
    if (typeof this.chainId === 'function') this.chainId = await this.chainId();
    const chainId = this.chainId;
    // Never sign text an operator sends unless it is a sign-in message naming that operator.
    // viem's SIWE code loads only here: a command with a cached session never signs in.
    const { siweRefusal } = await import('./siwe-refusal.ts');
    const refusal = siweRefusal(challenge.message, {
      baseUrl: this.baseUrl,
      address: account.address,
      nonce: challenge.nonce,
      ...(chainId === undefined ? {} : { chainId }),
    });
    if (refusal) {
      throw new ClientError(
        'BAD_RESPONSE',
        `operator ${this.baseUrl} asked to sign a message that does not sign in to it (${refusal}); refusing to sign. If the operator is reached under another name, use the URL it advertises (OPERATOR_PUBLIC_URL)`,
      );
    }
    const signature = await account.signMessage({ message: challenge.message });
    const session = await this.json('POST', '/api/auth/session', Session, {
      auth: false,
      body: { nonce: challenge.nonce, address: account.address, signature },
    });
    if (session.address.toLowerCase() !== account.address.toLowerCase()) {
      throw new ClientError(
        'BAD_RESPONSE',
        `operator issued a session for ${session.address}, not for ${account.address}; refusing it`,
      );
    }
    this.token = session.token;
    this.tokenExpiresAt = parseExpiry(session.expires_at);
    await this.onSession?.({ ...session, expiresAt: this.tokenExpiresAt });
    return session;
  }

  /** Revokes the session on the operator and forgets it here. */
  async logout(): Promise<void> {
    if (!this.token) return;
    try {
      await this.request('DELETE', '/api/auth/session', { auth: true });
    } finally {
      this.token = undefined;
      this.tokenExpiresAt = undefined;
    }
  }

  /** The Authorization header of the session (signing in first when needed): for the SSH tunnel. */
  sessionHeader(): Promise<Record<string, string>> {
    return this.authHeader();
  }

  private async authHeader(): Promise<Record<string, string>> {
    const now = Math.floor(Date.now() / 1000);
    const expired = this.tokenExpiresAt !== undefined && this.tokenExpiresAt - 30 <= now;
    if ((!this.token || expired) && this.account) await this.login();
    if (!this.token) {
      throw new ClientError('UNAUTHORIZED', 'not signed in to this operator; run `agent-sandbox login`');
    }
    return { authorization: `Bearer ${this.token}` };
  }

  /** One HTTP call; returns the Response for 2xx and 404 (callers decide what 404 means). */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const auth = options.auth ?? true;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (auth) Object.assign(headers, await this.authHeader());
      const init: RequestInit = { method, headers };
      if (options.raw) {
        headers['content-type'] = options.raw.type;
        init.body = Buffer.from(options.raw.bytes);
      } else if (options.body !== undefined) {
        headers['content-type'] = 'application/json';
        init.body = JSON.stringify(options.body);
      }
      const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
      init.signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let res: Response;
      try {
        res = await this.doFetch(`${this.baseUrl}${path}`, init);
      } catch (e) {
        if (options.signal?.aborted) throw new ClientError('INTERRUPTED', 'request cancelled', { cause: e });
        if (timeout.aborted) {
          throw new ClientError(
            'TIMEOUT',
            `operator ${this.baseUrl} did not answer ${method} ${path} in time; retry`,
            {
              cause: e,
            },
          );
        }
        throw new ClientError(
          'NETWORK',
          `could not reach the operator at ${this.baseUrl} (${(e as Error).message}); check --operator and that it is running`,
          { cause: e },
        );
      }
      // A session can expire or be revoked under us: sign in again once, then give up.
      if (res.status === 401 && auth && attempt === 0 && this.account) {
        await res.body?.cancel().catch(() => {});
        this.token = undefined;
        await this.login();
        continue;
      }
      if (res.ok || res.status === 404) return res;
      throw await this.errorFrom(res);
    }
  }

  /** Request and validate a JSON answer; 404 becomes a NOT_FOUND ClientError. */
  async json<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    options: RequestOptions = {},
  ): Promise<z.output<T>> {
    const res = await this.request(method, path, options);
    if (res.status === 404) throw await this.errorFrom(res);
    return this.parse(res, schema, `${method} ${path}`);
  }

  async parse<T extends z.ZodType>(res: Response, schema: T, what: string): Promise<z.output<T>> {
    const requestId = res.headers.get('x-request-id') ?? undefined;
    let body: unknown;
    try {
      body = await res.json();
    } catch (e) {
      throw new ClientError('BAD_RESPONSE', `operator answered ${what} with something that is not JSON`, {
        status: res.status,
        cause: e,
        ...(requestId ? { requestId } : {}),
      });
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new ClientError(
        'BAD_RESPONSE',
        `operator's answer to ${what} is not what this client understands (${z.prettifyError(parsed.error).split('\n')[0]}); check that client and operator versions match`,
        { status: res.status, ...(requestId ? { requestId } : {}) },
      );
    }
    return parsed.data;
  }

  /** The API's `{error:{code,message,request_id}}` as a ClientError with a hint. */
  async errorFrom(res: Response): Promise<ClientError> {
    const text = await res.text().catch(() => '');
    let requestId = res.headers.get('x-request-id') ?? undefined;
    let code = statusCode(res.status);
    let message = `operator answered HTTP ${res.status}`;
    const details: Record<string, unknown> = {};
    try {
      const body = ApiErrorBody.parse(JSON.parse(text));
      code = body.error.code;
      if (body.error.message) message = body.error.message;
      requestId = body.error.request_id ?? requestId;
      if (body.error.retry_after_ms !== undefined) details.retry_after_ms = body.error.retry_after_ms;
    } catch {
      // not the documented shape: keep the status-derived code
    }
    const retryAfter = res.headers.get('retry-after');
    if (retryAfter && /^\d+$/.test(retryAfter) && details.retry_after_ms === undefined) {
      details.retry_after_ms = Number(retryAfter) * 1000;
    }
    const hint = hintFor(code, details);
    return new ClientError(code, hint ? `${message}; ${hint}` : message, {
      status: res.status,
      ...(requestId ? { requestId } : {}),
      ...(Object.keys(details).length ? { details } : {}),
    });
  }

  /** An authenticated SSE stream that re-logs in once on 401 and resumes with Last-Event-ID. */
  stream(
    path: string,
    options: { lastEventId?: string; signal?: AbortSignal; onEnd?: () => Promise<boolean> | boolean } = {},
  ): AsyncGenerator<SseEvent> {
    let relogged = false;
    return readSse(`${this.baseUrl}${path}`, {
      fetch: this.doFetch,
      headers: () => this.authHeader(),
      ...(options.lastEventId === undefined ? {} : { lastEventId: options.lastEventId }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onEnd ? { onEnd: options.onEnd } : {}),
      onHttpError: async (res) => {
        if (res.status === 401 && !relogged && this.account) {
          relogged = true;
          this.token = undefined;
          await this.login();
          return 'retry';
        }
        return this.errorFrom(res);
      },
    });
  }
}

function statusCode(status: number): string {
  switch (status) {
    case 400:
      return 'VALIDATION';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 429:
      return 'RATE_LIMITED';
    default:
      return 'REMOTE';
  }
}
