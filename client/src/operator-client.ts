// OperatorClient: everything a sandbox's owner does over the operator API (spec/operator-api.md)
// once the sandbox exists — list/get, exec, prompt runs with their event streams, terminals,
// secrets, stop/resume/snapshot, and the public provision progress of a create job.
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import {
  ExecResult,
  LifecycleResult,
  Members,
  PreviewLink,
  PreviewLinkList,
  Provision,
  RunAccepted,
  RunInfo,
  Sandbox,
  SandboxList,
  type SandboxScope,
  SecretNames,
  Shapes,
  SshInfo,
  SshKeyAdded,
  TERMINAL_RUN_STATES,
  TerminalCreated,
} from './api-types.ts';
import { ClientError } from './errors.ts';
import { OperatorHttp, type OperatorHttpOptions } from './operator-http.ts';
import type { SseEvent } from './sse.ts';
import type { FileList, SandboxOps } from './tee-sandbox.ts';
import { type Workflow, WorkflowList, type WorkflowRun, WorkflowRunList } from './workflow-types.ts';

export interface OperatorClientOptions extends OperatorHttpOptions {
  /** `instance` serves one sandbox under `/api/sandbox/…`; default `cloud` (`/api/sandboxes/{id}/…`). */
  mode?: 'cloud' | 'instance';
}

export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export interface PromptOptions {
  sessionId?: string;
  backendType?: string;
  model?: string;
  timeoutMs?: number;
}

/** One event of a run: `data` is the parsed JSON when the frame is JSON, else the raw text. */
export interface RunEvent {
  id: string | undefined;
  event: string;
  data: unknown;
}

export interface PromptRun {
  runId: string;
  sessionId: string | undefined;
  status: string;
  /** The run's events from the start (or after `lastEventId`), resuming across dropped links. */
  events: (options?: { lastEventId?: string; signal?: AbortSignal }) => AsyncGenerator<RunEvent>;
  cancel: () => Promise<void>;
}

export interface TerminalOptions {
  cols?: number;
  rows?: number;
  cwd?: string;
  env?: Record<string, string>;
}

function toRunEvent(ev: SseEvent): RunEvent {
  let data: unknown = ev.data;
  try {
    data = JSON.parse(ev.data);
  } catch {
    // plain text frame
  }
  return { id: ev.id, event: ev.event, data };
}

/** PTY output frames: `{"type":"data.stdout","properties":{"text":…}}` or raw text. */
export function terminalText(ev: SseEvent): string | undefined {
  try {
    const v = JSON.parse(ev.data) as { type?: unknown; properties?: { text?: unknown } };
    if (v && typeof v === 'object' && typeof v.properties?.text === 'string') return v.properties.text;
    if (v && typeof v === 'object' && 'type' in v) return undefined; // a non-output control frame
  } catch {
    // raw text frame
  }
  return ev.data;
}

const FileListSchema = z.looseObject({
  path: z.string(),
  entries: z.array(
    z.looseObject({
      name: z.string(),
      type: z.enum(['file', 'directory', 'symlink', 'other']),
      size: z.number(),
      mtime_ms: z.number(),
    }),
  ),
  truncated: z.boolean(),
});
const FileWritten = z.looseObject({ path: z.string(), size: z.number() });

export class OperatorClient implements SandboxOps {
  readonly http: OperatorHttp;
  private readonly mode: 'cloud' | 'instance';

  constructor(options: OperatorClientOptions) {
    this.http = new OperatorHttp(options);
    this.mode = options.mode ?? 'cloud';
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  login() {
    return this.http.login();
  }

  logout() {
    return this.http.logout();
  }

  private path(id: string, rest = ''): string {
    if (this.mode === 'instance') return `/api/sandbox${rest}`;
    if (!id) throw new ClientError('USAGE', 'a sandbox id is required');
    return `/api/sandboxes/${encodeURIComponent(id)}${rest}`;
  }

  // ---- public -------------------------------------------------------------------------------

  /**
   * Provision progress of a create job; null while the operator has not seen the call yet. Signed
   * in (a client with an account or a session), the owner also gets the sandbox id and the failure
   * reason; anonymous callers get the phases only.
   */
  async provision(callId: bigint | number | string, signal?: AbortSignal): Promise<Provision | null> {
    const res = await this.http.request('GET', `/api/provisions/${String(callId)}`, {
      auth: this.http.canSignIn,
      ...(signal ? { signal } : {}),
    });
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    return this.http.parse(res, Provision, 'GET /api/provisions');
  }

  /** Alias of `provision`, named like the route. */
  provisions(callId: bigint | number | string, signal?: AbortSignal): Promise<Provision | null> {
    return this.provision(callId, signal);
  }

  async capabilities(): Promise<Record<string, unknown>> {
    return this.http.json('GET', '/api/capabilities', z.record(z.string(), z.unknown()), { auth: false });
  }

  /** Size presets, the default preset and the ceiling (`create --shape NAME` picks a preset). */
  async shapes(): Promise<Shapes> {
    return this.http.json('GET', '/api/shapes', Shapes, { auth: false });
  }

  // ---- workflows (owner only) --------------------------------------------------------------

  async workflows(): Promise<Workflow[]> {
    return this.http.json('GET', '/api/workflows', WorkflowList);
  }

  async workflowRuns(workflowId: bigint | string, limit = 20): Promise<WorkflowRun[]> {
    return this.http.json('GET', `/api/workflows/${String(workflowId)}/runs?limit=${limit}`, WorkflowRunList);
  }

  // ---- sandboxes ----------------------------------------------------------------------------

  /** personal: yours with no members; team: shared ones (yours with members, or you are one); all. */
  async list(scope: SandboxScope = 'all'): Promise<Sandbox[]> {
    return this.http.json('GET', `/api/sandboxes?scope=${scope}`, SandboxList);
  }

  /**
   * The sandbox with exactly this id, or null when the operator does not know it (404). Never
   * creates, starts or substitutes anything; auth, transport and server errors still throw.
   */
  async get(id: string): Promise<Sandbox | null> {
    const res = await this.http.request('GET', this.path(id));
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    const sandbox = await this.http.parse(res, Sandbox, 'GET sandbox');
    if (this.mode === 'cloud' && sandbox.id !== id) {
      throw new ClientError(
        'BAD_RESPONSE',
        `asked for sandbox ${id} but the operator answered with ${sandbox.id}`,
      );
    }
    return sandbox;
  }

  /** Throws NOT_FOUND / SANDBOX_NOT_RUNNING unless the sandbox exists and is running. */
  async requireRunning(id: string): Promise<Sandbox> {
    const sandbox = await this.get(id);
    if (!sandbox) throw new ClientError('NOT_FOUND', `sandbox ${id} does not exist on ${this.baseUrl}`);
    if (sandbox.state !== 'running') {
      throw new ClientError(
        'SANDBOX_NOT_RUNNING',
        `sandbox ${id} is ${sandbox.state}, not running; resume it first with \`agent-sandbox resume ${id}\``,
        { details: { state: sandbox.state } },
      );
    }
    return sandbox;
  }

  /** Runs a command. Refuses a sandbox that is not running before sending anything to it. */
  async exec(id: string, command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (!command.trim()) throw new ClientError('USAGE', 'exec needs a non-empty command');
    await this.requireRunning(id);
    const body: Record<string, unknown> = { command };
    if (options.cwd !== undefined) body.cwd = options.cwd;
    if (options.env !== undefined) body.env = options.env;
    if (options.timeoutMs !== undefined) body.timeout_ms = options.timeoutMs;
    // The command's own timeout plus slack, never below the API's 120 s request limit.
    return this.http.json('POST', this.path(id, '/exec'), ExecResult, {
      body,
      timeoutMs: Math.max((options.timeoutMs ?? 0) + 30_000, 130_000),
    });
  }

  async stop(id: string): Promise<LifecycleResult> {
    return this.http.json('POST', this.path(id, '/stop'), LifecycleResult);
  }

  async resume(id: string): Promise<LifecycleResult> {
    return this.http.json('POST', this.path(id, '/resume'), LifecycleResult);
  }

  async snapshot(id: string): Promise<Record<string, unknown>> {
    return this.http.json('POST', this.path(id, '/snapshot'), z.record(z.string(), z.unknown()));
  }

  // ---- secrets (names only ever come back) --------------------------------------------------

  async setSecrets(id: string, env: Record<string, string>): Promise<Record<string, unknown>> {
    const n = Object.keys(env).length;
    if (n < 1 || n > 256) throw new ClientError('USAGE', `secrets take 1 to 256 keys, got ${n}`);
    for (const [k, v] of Object.entries(env)) {
      if (!k || k.length > 256)
        throw new ClientError('USAGE', `secret name "${k.slice(0, 40)}" must be 1–256 chars`);
      if (Buffer.byteLength(v) > 64 * 1024) throw new ClientError('USAGE', `secret ${k} is over 64 KiB`);
    }
    return this.http.json('POST', this.path(id, '/secrets'), z.record(z.string(), z.unknown()), {
      body: { env },
    });
  }

  async wipeSecrets(id: string): Promise<Record<string, unknown>> {
    return this.http.json('DELETE', this.path(id, '/secrets'), z.record(z.string(), z.unknown()));
  }

  async listSecrets(id: string): Promise<string[]> {
    return this.http.json('GET', this.path(id, '/secrets'), SecretNames);
  }

  // ---- team access and preview links (owner only, except listing members) -------------------

  async members(id: string): Promise<Members> {
    return this.http.json('GET', this.path(id, '/members'), Members);
  }

  async addMember(id: string, address: string): Promise<Members> {
    return this.http.json('POST', this.path(id, '/members'), Members, { body: { address } });
  }

  async removeMember(id: string, address: string): Promise<Members> {
    return this.http.json('DELETE', this.path(id, `/members/${encodeURIComponent(address)}`), Members);
  }

  // ---- SSH ----------------------------------------------------------------------------------

  async ssh(id: string): Promise<SshInfo> {
    return this.http.json('GET', this.path(id, '/ssh'), SshInfo);
  }

  async addSshKey(id: string, publicKey: string): Promise<SshKeyAdded> {
    return this.http.json('POST', this.path(id, '/ssh'), SshKeyAdded, { body: { public_key: publicKey } });
  }

  async removeSshKey(id: string, fingerprint: string): Promise<SshInfo> {
    return this.http.json(
      'DELETE',
      this.path(id, `/ssh?fingerprint=${encodeURIComponent(fingerprint)}`),
      SshInfo,
    );
  }

  /**
   * Opens the SSH tunnel (a WebSocket, signed in with this session) and resolves with its byte
   * stream: what ssh writes goes to the sandbox's sshd and back. Refusals are ClientErrors.
   */
  async sshTunnel(id: string): Promise<Duplex> {
    const headers = await this.http.sessionHeader();
    const url = new URL(this.path(id, '/ssh/tunnel'), this.baseUrl);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const { WebSocket, createWebSocketStream } = await import('ws');
    const ws = new WebSocket(url, { headers, maxPayload: 1024 * 1024 });
    return new Promise<Duplex>((resolve, reject) => {
      ws.once('open', () => resolve(createWebSocketStream(ws)));
      ws.once('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          void this.http
            .errorFrom(new Response(body.length ? body : null, { status: res.statusCode ?? 502, headers: h }))
            .then(reject, reject);
        });
        res.on('error', reject);
      });
      ws.once('error', (e) =>
        reject(new ClientError('NETWORK', `cannot open the SSH tunnel at ${url.origin}: ${e.message}`)),
      );
    });
  }

  async createPreviewLink(id: string, port: number, expiresInSeconds?: number): Promise<PreviewLink> {
    const body = {
      port,
      ...(expiresInSeconds === undefined ? {} : { expires_in_seconds: expiresInSeconds }),
    };
    return this.http.json('POST', this.path(id, '/preview-links'), PreviewLink, { body });
  }

  async previewLinks(id: string): Promise<PreviewLink[]> {
    return (await this.http.json('GET', this.path(id, '/preview-links'), PreviewLinkList)).links;
  }

  async revokePreviewLink(id: string, linkId: string): Promise<PreviewLink> {
    return this.http.json(
      'DELETE',
      this.path(id, `/preview-links/${encodeURIComponent(linkId)}`),
      PreviewLink,
    );
  }

  // ---- agent runs ---------------------------------------------------------------------------

  /** Starts a prompt run (202) and hands back a handle to stream or cancel it. */
  async prompt(id: string, message: string, options: PromptOptions = {}): Promise<PromptRun> {
    if (!message.trim()) throw new ClientError('USAGE', 'prompt needs a non-empty message');
    await this.requireRunning(id);
    const body: Record<string, unknown> = { message };
    if (options.sessionId !== undefined) body.session_id = options.sessionId;
    if (options.backendType !== undefined) body.backend_type = options.backendType;
    if (options.model !== undefined) body.model = options.model;
    if (options.timeoutMs !== undefined) body.timeout_ms = options.timeoutMs;
    const accepted = await this.http.json('POST', this.path(id, '/prompt'), RunAccepted, { body });
    return this.runHandle(id, accepted);
  }

  /** A handle for a run started earlier (e.g. to resume its stream after a restart). */
  runHandle(
    id: string,
    accepted: { run_id: string; session_id?: string | undefined; status?: string },
  ): PromptRun {
    const runId = accepted.run_id;
    return {
      runId,
      sessionId: accepted.session_id,
      status: accepted.status ?? 'unknown',
      events: (opts) => this.runEvents(id, runId, opts),
      cancel: () => this.cancelRun(id, runId),
    };
  }

  async run(id: string, runId: string): Promise<RunInfo> {
    return this.http.json('GET', this.path(id, `/runs/${encodeURIComponent(runId)}`), RunInfo);
  }

  /** The run's events; a stream that ends while the run is still going is resumed. */
  async *runEvents(
    id: string,
    runId: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<RunEvent> {
    const stream = this.http.stream(this.path(id, `/runs/${encodeURIComponent(runId)}/events`), {
      ...options,
      onEnd: async () => {
        const info = await this.run(id, runId);
        const state = (info.status ?? info.state ?? '').toLowerCase();
        return state !== '' && !TERMINAL_RUN_STATES.has(state);
      },
    });
    for await (const ev of stream) yield toRunEvent(ev);
  }

  async cancelRun(id: string, runId: string): Promise<void> {
    const res = await this.http.request('POST', this.path(id, `/runs/${encodeURIComponent(runId)}/cancel`));
    if (res.status === 404) throw await this.http.errorFrom(res);
    await res.body?.cancel().catch(() => {});
  }

  // ---- workspace files ----------------------------------------------------------------------

  async listFiles(id: string, path: string): Promise<FileList> {
    const q = path ? `?path=${encodeURIComponent(path)}` : '';
    return this.http.json('GET', this.path(id, `/files${q}`), FileListSchema);
  }

  async readFile(id: string, path: string): Promise<Uint8Array> {
    const res = await this.http.request(
      'GET',
      this.path(id, `/files/content?path=${encodeURIComponent(path)}`),
    );
    if (res.status === 404) throw await this.http.errorFrom(res);
    return new Uint8Array(await res.arrayBuffer());
  }

  async writeFile(id: string, path: string, bytes: Uint8Array): Promise<{ path: string; size: number }> {
    return this.http.json(
      'PUT',
      this.path(id, `/files/content?path=${encodeURIComponent(path)}`),
      FileWritten,
      {
        raw: { bytes, type: 'application/octet-stream' },
      },
    );
  }

  // ---- terminals ----------------------------------------------------------------------------

  async createTerminal(
    id: string,
    options: TerminalOptions = {},
  ): Promise<{ terminalId: string } & Record<string, unknown>> {
    await this.requireRunning(id);
    return this.http.json('POST', this.path(id, '/terminals'), TerminalCreated, { body: options });
  }

  async listTerminals(id: string): Promise<unknown> {
    return this.http.json('GET', this.path(id, '/terminals'), z.unknown());
  }

  /** PTY output as text chunks; ends when the shell's stream ends. */
  async *terminalOutput(id: string, terminalId: string, signal?: AbortSignal): AsyncGenerator<string> {
    const stream = this.http.stream(this.path(id, `/terminals/${encodeURIComponent(terminalId)}/stream`), {
      ...(signal ? { signal } : {}),
    });
    for await (const ev of stream) {
      const text = terminalText(ev);
      if (text !== undefined) yield text;
    }
  }

  async terminalInput(id: string, terminalId: string, data: string): Promise<void> {
    const res = await this.http.request(
      'POST',
      this.path(id, `/terminals/${encodeURIComponent(terminalId)}/input`),
      {
        body: { data },
      },
    );
    if (res.status === 404) throw await this.http.errorFrom(res);
    await res.body?.cancel().catch(() => {});
  }

  async resizeTerminal(id: string, terminalId: string, cols: number, rows: number): Promise<void> {
    const res = await this.http.request(
      'PATCH',
      this.path(id, `/terminals/${encodeURIComponent(terminalId)}`),
      {
        body: { cols, rows },
      },
    );
    if (res.status === 404) throw await this.http.errorFrom(res);
    await res.body?.cancel().catch(() => {});
  }

  /** Deletes a terminal; an already-gone terminal is not an error. */
  async deleteTerminal(id: string, terminalId: string): Promise<void> {
    const res = await this.http.request(
      'DELETE',
      this.path(id, `/terminals/${encodeURIComponent(terminalId)}`),
    );
    await res.body?.cancel().catch(() => {});
  }
}
