// OperatorClient over real HTTP: sign-in with a real secp256k1 key, 401 re-login, get → null on
// 404, exec refusing a stopped sandbox, the error shape, prompt streams across a cut connection.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode, isClientError } from './errors.ts';
import { OperatorClient, type RunEvent } from './operator-client.ts';
import { type SpecOperator, startSpecOperator } from './testing/spec-operator.ts';

const owner = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());

let op: SpecOperator;
beforeEach(async () => {
  op = await startSpecOperator();
  op.sandboxes.set('sb-1', { id: 'sb-1', owner: owner.address.toLowerCase(), state: 'running', secrets: {} });
  op.sandboxes.set('sb-2', { id: 'sb-2', owner: owner.address.toLowerCase(), state: 'stopped', secrets: {} });
});
afterEach(async () => op.close());

describe('sign-in', () => {
  it('signs the challenge with the wallet and reports the session', async () => {
    const sessions: string[] = [];
    const c = new OperatorClient({
      baseUrl: op.url,
      account: owner,
      onSession: (s) => void sessions.push(s.address),
    });
    const s = await c.login();
    expect(s.address).toBe(owner.address.toLowerCase());
    expect(sessions).toEqual([owner.address.toLowerCase()]);
    expect(op.tokens.get(s.token)).toBe(owner.address.toLowerCase());
  });

  it('logs in lazily and again once when the session is refused (401)', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    expect((await c.list()).map((s) => s.id).sort()).toEqual(['sb-1', 'sb-2']);
    op.tokens.clear(); // the operator forgot/revoked every session
    expect(await c.get('sb-1')).toMatchObject({ id: 'sb-1', state: 'running' });
    expect(op.log.filter((l) => l === 'POST /api/auth/session')).toHaveLength(2);
  });

  it('without a key, a refused token is an auth error that says to log in', async () => {
    const c = new OperatorClient({ baseUrl: op.url, token: 'v4.local.stale' });
    const err = await c.list().catch((e) => e);
    expect(isClientError(err, 'UNAUTHORIZED')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.AUTH);
    expect(err.status).toBe(401);
    expect(err.requestId).toMatch(/^req-/);
    expect(err.message).toContain('agent-sandbox login');
  });

  it('signs in again before using a token it knows has expired (no 401 round trip)', async () => {
    const c = new OperatorClient({
      baseUrl: op.url,
      account: owner,
      token: 'v4.local.old',
      tokenExpiresAt: Math.floor(Date.now() / 1000) - 10,
    });
    await c.list();
    expect(op.log.slice(0, 3)).toEqual([
      'POST /api/auth/challenge',
      'POST /api/auth/session',
      'GET /api/sandboxes',
    ]);
  });

  it('concurrent calls share one sign-in', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    await Promise.all([c.list(), c.get('sb-1'), c.get('sb-2')]);
    expect(op.log.filter((l) => l === 'POST /api/auth/session')).toHaveLength(1);
  });

  it('429 keeps its code, says when to retry, exits 5', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    await c.login();
    op.rateLimitSeconds = 7;
    const err = await c.list().catch((e) => e);
    expect(isClientError(err, 'RATE_LIMITED')).toBe(true);
    expect(err.message).toBe('too many requests; slow down and retry in 7 s');
    expect(err.details).toEqual({ retry_after_ms: 7000 });
    expect(err.exitCode).toBe(ExitCode.REMOTE);
  });

  it('refuses to sign a challenge that is not the documented sign-in text', async () => {
    await op.close();
    op = await startSpecOperator({ tamperChallenge: true });
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    await expect(c.login()).rejects.toSatisfy((e) => isClientError(e, 'BAD_RESPONSE'));
    expect(op.log).not.toContain('POST /api/auth/session');
  });

  it('logout revokes the session on the operator', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const s = await c.login();
    await c.logout();
    expect(op.tokens.has(s.token)).toBe(false);
  });
});

describe('sandboxes', () => {
  it('get returns null for an unknown id and never creates anything', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    expect(await c.get('nope')).toBeNull();
    expect(op.sandboxes.size).toBe(2);
    expect(op.log.filter((l) => l.startsWith('POST /api/sandboxes'))).toEqual([]);
  });

  it("another owner's sandbox is FORBIDDEN (exit 2), not null", async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: stranger });
    const err = await c.get('sb-1').catch((e) => e);
    expect(isClientError(err, 'FORBIDDEN')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.AUTH);
  });

  it('exec runs on a running sandbox', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    expect(await c.exec('sb-1', 'echo hi')).toMatchObject({ exit_code: 0, stdout: 'ran: echo hi\n' });
  });

  it('exec refuses a stopped sandbox before sending the command', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const err = await c.exec('sb-2', 'echo hi').catch((e) => e);
    expect(isClientError(err, 'SANDBOX_NOT_RUNNING')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.CONFLICT);
    expect(err.message).toContain('agent-sandbox resume sb-2');
    expect(op.log).not.toContain('POST /api/sandboxes/sb-2/exec');
  });

  it('exec on an unknown sandbox is NOT_FOUND (exit 3)', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const err = await c.exec('gone', 'true').catch((e) => e);
    expect(isClientError(err, 'NOT_FOUND')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.NOT_FOUND);
  });

  it("maps the API's 409 when the sandbox stops between the check and the call", async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const http = c.http;
    const err = await http
      .json('POST', '/api/sandboxes/sb-2/exec', (await import('./api-types.ts')).ExecResult, {
        body: { command: 'x' },
      })
      .catch((e) => e);
    expect(isClientError(err, 'SANDBOX_STOPPED')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.CONFLICT);
    expect(err.message).toMatch(/sandbox is stopped; resume it first/);
  });

  it('stop and resume move the state, secrets come back as names only', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    expect(await c.stop('sb-1')).toMatchObject({ state: 'stopped' });
    expect(await c.resume('sb-1')).toMatchObject({ state: 'running' });
    await c.setSecrets('sb-1', { API_KEY: 'v1', OTHER: 'v2' });
    expect(await c.listSecrets('sb-1')).toEqual(['API_KEY', 'OTHER']);
    await c.wipeSecrets('sb-1');
    expect(await c.listSecrets('sb-1')).toEqual([]);
  });

  it('refuses bad secrets client-side', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    await expect(c.setSecrets('sb-1', {})).rejects.toSatisfy((e) => isClientError(e, 'USAGE'));
    await expect(c.setSecrets('sb-1', { BIG: 'x'.repeat(64 * 1024 + 1) })).rejects.toSatisfy((e) =>
      isClientError(e, 'USAGE'),
    );
  });

  it('provision progress is public and null before the operator saw the call', async () => {
    const c = new OperatorClient({ baseUrl: op.url });
    expect(await c.provision(7n)).toBeNull();
    op.provisions.set('7', { call_id: 7, phase: 'health_check', updated_at: 1 });
    expect(await c.provision(7n)).toMatchObject({ phase: 'health_check' });
  });

  it('an unreachable operator is a NETWORK error that names the URL (exit 5)', async () => {
    const c = new OperatorClient({ baseUrl: 'http://127.0.0.1:9', account: owner });
    const err = await c.list().catch((e) => e);
    expect(isClientError(err, 'NETWORK')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.REMOTE);
    expect(err.message).toContain('127.0.0.1:9');
  });
});

describe('prompt runs', () => {
  it('streams every event once across a cut connection, resuming with Last-Event-ID', async () => {
    op.runScript.events = [
      { event: 'execution.started', data: { sessionId: 'sess-1' } },
      { event: 'message.part.updated', data: { part: { id: 'p1', type: 'text', text: 'Hel' } } },
      { event: 'message.part.updated', data: { part: { id: 'p1', type: 'text', text: 'Hello' } } },
      { event: 'result', data: { finalText: 'Hello' } },
    ];
    op.runScript.cutAfter = 2;
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const run = await c.prompt('sb-1', 'say hello');
    expect(run.runId).toBe('run-1');
    const got: RunEvent[] = [];
    for await (const ev of run.events()) got.push(ev);
    expect(got.map((e) => e.id)).toEqual(['1', '2', '3', '4']);
    expect(got.map((e) => e.event)).toEqual([
      'execution.started',
      'message.part.updated',
      'message.part.updated',
      'result',
    ]);
    expect(got[3]!.data).toEqual({ finalText: 'Hello' });
    expect(op.lastEventIds).toEqual([undefined, '2']);
  });

  it('a second prompt while one runs is CHAT_RUN_ACTIVE (exit 4); cancel ends the run', async () => {
    op.runScript.events = [];
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const run = await c.prompt('sb-1', 'long task');
    const err = await c.prompt('sb-1', 'another').catch((e) => e);
    expect(isClientError(err, 'CHAT_RUN_ACTIVE')).toBe(true);
    expect(err.exitCode).toBe(ExitCode.CONFLICT);
    const stream = (async () => {
      const seen = [];
      for await (const ev of run.events()) seen.push(ev);
      return seen;
    })();
    await new Promise((r) => setTimeout(r, 50));
    await run.cancel();
    expect(await stream).toEqual([]);
    expect(op.cancelled).toEqual(['run-1']);
  });

  it('refuses to prompt a stopped sandbox', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    await expect(c.prompt('sb-2', 'hi')).rejects.toSatisfy((e) => isClientError(e, 'SANDBOX_NOT_RUNNING'));
  });
});

describe('terminals', () => {
  it('creates a terminal, streams output, sends input, resizes and deletes', async () => {
    const c = new OperatorClient({ baseUrl: op.url, account: owner });
    const t = await c.createTerminal('sb-1', { cols: 80, rows: 24 });
    expect(t.terminalId).toBe('term-1');
    const out: string[] = [];
    const reading = (async () => {
      for await (const chunk of c.terminalOutput('sb-1', t.terminalId)) out.push(chunk);
    })();
    await new Promise((r) => setTimeout(r, 50));
    await c.resizeTerminal('sb-1', t.terminalId, 100, 30);
    await c.terminalInput('sb-1', t.terminalId, 'ls\r');
    await c.terminalInput('sb-1', t.terminalId, 'exit\r');
    await reading;
    expect(out.join('')).toBe('$ ls\rexit\r');
    await c.deleteTerminal('sb-1', t.terminalId);
    expect(op.log).toContain('PATCH /api/sandboxes/sb-1/terminals/term-1');
  });
});
