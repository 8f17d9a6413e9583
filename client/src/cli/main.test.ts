// The CLI in-process against a spec-speaking operator: exit codes a script can rely on, one-line
// errors, cached sessions that are never printed, streaming prompt output, Ctrl-C cancelling a
// run, and the terminal.
import { readFileSync, rmSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-harness.ts';
import { type SpecOperator, startSpecOperator } from '../testing/spec-operator.ts';

const key = generatePrivateKey();
const owner = privateKeyToAccount(key);

let op: SpecOperator;
let configDir: string;
beforeEach(async () => {
  op = await startSpecOperator();
  op.sandboxes.set('sb-1', { id: 'sb-1', owner: owner.address.toLowerCase(), state: 'running', secrets: {} });
  op.sandboxes.set('sb-2', { id: 'sb-2', owner: owner.address.toLowerCase(), state: 'stopped', secrets: {} });
  configDir = await mkdtemp(join(tmpdir(), 'client-cli-'));
});
afterEach(async () => {
  await op.close();
  rmSync(configDir, { recursive: true, force: true });
});

function cli(
  argv: string[],
  opts: { env?: Record<string, string>; stdin?: PassThrough; abortAfterMs?: number } = {},
) {
  return runCliInProcess(argv, { configDir, ...opts });
}

/** Resolves `until(pred)` once the CLI's stdout so far satisfies pred. */
function outputWatcher() {
  let soFar = '';
  const waiters: Array<{ pred: (o: string) => boolean; done: () => void }> = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.pred(soFar)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done();
      }
    }
  };
  return {
    update: (o: string) => {
      soFar = o;
      check();
    },
    until: (pred: (o: string) => boolean) =>
      new Promise<void>((done) => {
        waiters.push({ pred, done });
        check();
      }),
  };
}

const withKey = () => ['--operator', op.url, '--private-key', key];

describe('help and usage', () => {
  it('--help exits 0 with usage on stdout; `help <cmd>` too', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Usage: agent-sandbox <command>');
    const h = await cli(['help', 'exec']);
    expect(h).toMatchObject({ code: 0 });
    expect(h.out).toContain('Usage: agent-sandbox exec');
    expect((await cli(['prompt', '--help'])).out).toContain('Ctrl-C cancels');
  });

  it('no command, an unknown command or flag: exit 1 with a one-line error', async () => {
    expect((await cli([])).code).toBe(1);
    const r = await cli(['frobnicate']);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/^agent-sandbox: unknown command "frobnicate".*\(code USAGE\)\n$/);
    expect((await cli(['list', '--bogus'])).code).toBe(1);
    expect((await cli(['help', 'bogus'])).code).toBe(1);
  });

  it('--json errors are one JSON object on stderr', async () => {
    const r = await cli(['list', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.err)).toMatchObject({ error: { code: 'USAGE', exit_code: 1 } });
  });
});

describe('sessions', () => {
  it('login caches the session 0600 and never prints the token unless asked', async () => {
    const r = await cli(['login', ...withKey()]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`signed in to ${op.url} as ${owner.address}`);
    const file = join(configDir, 'sessions.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const [token] = [...op.tokens.keys()];
    expect(readFileSync(file, 'utf8')).toContain(token!);
    expect(r.out + r.err).not.toContain(token!);
    const shown = await cli(['login', ...withKey(), '--show-token', '--json']);
    const printed = JSON.parse(shown.out).token as string;
    expect(op.tokens.has(printed)).toBe(true);
  });

  it('later commands use the cached session without the key', async () => {
    await cli(['login', ...withKey()]);
    const r = await cli(['list', '--operator', op.url]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('sb-1\trunning');
    expect(op.log.filter((l) => l === 'POST /api/auth/session')).toHaveLength(1);
  });

  it('no key and no session: exit 2 telling to log in', async () => {
    const r = await cli(['list', '--operator', op.url]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/run `agent-sandbox login/);
  });

  it('a revoked cached session without a key: exit 2 with the request id', async () => {
    await cli(['login', ...withKey()]);
    op.tokens.clear();
    const r = await cli(['get', 'sb-1', '--operator', op.url]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/request_id req-/);
  });

  it('logout revokes and forgets the session', async () => {
    await cli(['login', ...withKey()]);
    expect((await cli(['logout', '--operator', op.url])).code).toBe(0);
    expect(op.tokens.size).toBe(0);
    expect((await cli(['list', '--operator', op.url])).code).toBe(2);
  });
});

describe('sandbox commands and exit codes', () => {
  it('shapes: presets with the default and what is above the ceiling, no sign-in; --json as served', async () => {
    const r = await cli(['shapes', '--operator', op.url]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(
      'small\t1 cores\t1024 MB\t10 GB\t(default)\nhuge\t16 cores\t65536 MB\t500 GB\t(above the ceiling)\nceiling\t4 cores\t8192 MB\t50 GB\n',
    );
    const j = await cli(['shapes', '--operator', op.url, '--json']);
    expect(JSON.parse(j.out)).toMatchObject({ default: 'small', ceiling: { cpuCores: 4 } });
  });

  it('create: --shape with a --capabilities-json that is not an object is a usage error (exit 1)', async () => {
    const r = await cli(['create', ...withKey(), '--shape', 'small', '--capabilities-json', '["gpu"]']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--capabilities-json must be a JSON object/);
  });

  it('create: --network other than default|strict, or --include-implicit-domains with default, is a usage error (exit 1)', async () => {
    const bad = await cli(['create', ...withKey(), '--network', 'open']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--network must be default or strict, got "open"/);
    const both = await cli(['create', ...withKey(), '--network', 'default', '--include-implicit-domains']);
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/--include-implicit-domains goes with --network strict/);
  });

  it('get: 0 with the record, 3 for an unknown id', async () => {
    const r = await cli(['get', 'sb-1', ...withKey(), '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ id: 'sb-1', state: 'running' });
    const missing = await cli(['get', 'nope', ...withKey()]);
    expect(missing.code).toBe(3);
    expect(missing.err).toMatch(/sandbox nope does not exist/);
  });

  it('get: says when each timer fires, as a time and how far off (not epoch ms)', async () => {
    const idle = Date.now() + 15 * 60_000;
    const life = Date.now() + 3 * 3600_000;
    Object.assign(op.sandboxes.get('sb-1')!, {
      timer_deadlines: { idle_stop_at: idle, max_lifetime_stop_at: life, delete_at: null },
    });
    const r = await cli(['get', 'sb-1', ...withKey()]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`stops if idle at: ${new Date(idle).toISOString()} (in 1`);
    expect(r.out).toMatch(/stops if idle at: \S+ \(in 1[45] min\)/);
    expect(r.out).toMatch(/stops at \(lifetime\): \S+ \(in 2 h 5\d min|in 3 h 0 min\)/);
    expect(r.out).not.toContain(String(idle));
    expect(r.out).not.toContain('deleted at');
    const j = await cli(['get', 'sb-1', ...withKey(), '--json']);
    expect(JSON.parse(j.out).timer_deadlines.idle_stop_at).toBe(idle);
  });

  it('exec: output passes through; 4 on a stopped sandbox; 7 when the command fails', async () => {
    const ok = await cli(['exec', 'sb-1', ...withKey(), '--', 'echo', 'hi']);
    expect(ok).toMatchObject({ code: 0, out: 'ran: echo hi\n' });
    const stopped = await cli(['exec', 'sb-2', ...withKey(), '--', 'true']);
    expect(stopped.code).toBe(4);
    expect(stopped.err).toMatch(/sb-2 is stopped.*agent-sandbox resume sb-2/);
    const failed = await cli(['exec', 'sb-1', ...withKey(), '--', 'exit 3']);
    expect(failed.code).toBe(7);
    expect(failed.err).toContain('[exit 3]');
  });

  it("another owner's sandbox: exit 2", async () => {
    const r = await cli(['get', 'sb-1', '--operator', op.url, '--private-key', generatePrivateKey()]);
    expect(r.code).toBe(2);
  });

  it('an unreachable operator: exit 5 naming it', async () => {
    const r = await cli(['list', '--operator', 'http://127.0.0.1:9', '--private-key', key]);
    expect(r.code).toBe(5);
    expect(r.err).toContain('127.0.0.1:9');
  });

  it('secrets: set from K=V and from the environment, list names only, wipe', async () => {
    const set = await cli(['secrets', 'set', 'sb-1', 'A=1', 'OPENAI_API_KEY', ...withKey()], {
      env: { OPENAI_API_KEY: 'sk-very-secret' },
    });
    expect(set.code).toBe(0);
    expect(set.out + set.err).not.toContain('sk-very-secret');
    expect(op.sandboxes.get('sb-1')!.secrets).toEqual({ A: '1', OPENAI_API_KEY: 'sk-very-secret' });
    expect((await cli(['secrets', 'list', 'sb-1', ...withKey()])).out).toBe('A\nOPENAI_API_KEY\n');
    expect((await cli(['secrets', 'wipe', 'sb-1', ...withKey()])).code).toBe(0);
    expect((await cli(['secrets', 'set', 'sb-1', 'MISSING', ...withKey()])).code).toBe(1);
    expect((await cli(['secrets', 'shred', 'sb-1', ...withKey()])).code).toBe(1);
  });

  it('stop and resume', async () => {
    expect((await cli(['stop', 'sb-1', ...withKey()])).out).toBe('sb-1: stopped\n');
    expect((await cli(['resume', 'sb-1', ...withKey()])).out).toBe('sb-1: running\n');
  });
});

describe('prompt', () => {
  it('prints the answer as it streams (deltas of cumulative parts), across a cut connection', async () => {
    op.runScript.events = [
      { event: 'execution.started', data: { sessionId: 's' } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'Hel' } } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'Hello' } } },
      { event: 'result', data: { finalText: 'Hello' } },
    ];
    op.runScript.cutAfter = 2;
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'say', 'hello']);
    expect(r.code).toBe(0);
    expect(r.out).toBe('Hello\n');
    expect(r.err).toContain('run run-1');
  });

  it('prints delta parts (delta: true) as they come, across a cut connection', async () => {
    op.runScript.events = [
      { event: 'execution.started', data: { sessionId: 's' } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'Hel' }, delta: true } },
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'lo' }, delta: true } },
      {
        event: 'message.part.updated',
        data: { part: { id: 'p', type: 'text', text: '', state: 'completed' }, delta: true },
      },
      { event: 'result', data: { finalText: 'Hello' } },
    ];
    op.runScript.cutAfter = 2;
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'say', 'hello']);
    expect(r.code).toBe(0);
    expect(r.out).toBe('Hello\n');
  });

  it('--json prints one event per line', async () => {
    op.runScript.events = [
      { event: 'message.part.updated', data: { part: { id: 'p', type: 'text', text: 'x' } } },
      { event: 'result', data: { finalText: 'x' } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), '--json', 'hi']);
    const lines = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.id, l.event])).toEqual([
      ['1', 'message.part.updated'],
      ['2', 'result'],
    ]);
  });

  it('Ctrl-C cancels the run on the operator and exits 130', async () => {
    op.runScript.events = []; // a run that goes on until cancelled
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'long', 'task'], { abortAfterMs: 300 });
    expect(r.code).toBe(130);
    expect(op.cancelled).toEqual(['run-1']);
  });

  it("follows the operator's run records: run.completed prints the final text, run.failed exits 5", async () => {
    op.runScript.events = [
      { event: 'run.queued', data: { run_id: 'run-1' } },
      { event: 'run.completed', data: { run_id: 'run-1', final_text: 'done', usage: null } },
    ];
    expect(await cli(['prompt', 'sb-1', ...withKey(), 'hi'])).toMatchObject({ code: 0, out: 'done\n' });
    await op.close();
    op = await startSpecOperator();
    op.sandboxes.set('sb-1', {
      id: 'sb-1',
      owner: owner.address.toLowerCase(),
      state: 'running',
      secrets: {},
    });
    op.runScript.events = [
      { event: 'run.failed', data: { run_id: 'run-1', code: 'AGENT_TIMEOUT', message: 'agent timed out' } },
    ];
    const failed = await cli(['prompt', 'sb-1', '--operator', op.url, '--private-key', key, '--json', 'hi']);
    expect(failed.code).toBe(5);
    expect(failed.err).toMatch(/agent timed out/);
    expect(JSON.parse(failed.out.trim()).event).toBe('run.failed');
  });

  it('an error event fails the command with exit 5', async () => {
    op.runScript.events = [
      { event: 'error', data: { code: 'AGENT_EXECUTION_FAILED', message: 'codex not installed' } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'hi']);
    expect(r.code).toBe(5);
    expect(r.err).toMatch(/codex not installed/);
  });
});

describe('terminal', () => {
  it('sends stdin to the shell, prints its output, and leaves on Ctrl-]', async () => {
    const stdin = new PassThrough();
    const seen = outputWatcher();
    const running = runCliInProcess(['terminal', 'sb-1', ...withKey()], {
      configDir,
      stdin,
      onStdout: seen.update,
    });
    await seen.until((o) => o.startsWith('$ '));
    stdin.write('ls\r');
    // Leave only once the shell's echo is on screen (no timed sleeps: CI is busy).
    await seen.until((o) => o.includes('$ ls\r'));
    stdin.write(Buffer.from([0x1d]));
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.out).toBe('$ ls\r');
    expect(op.terminalInput).toEqual(['ls\r']);
    expect(op.log).toContain('DELETE /api/sandboxes/sb-1/terminals/term-1');
  });

  it('ends with the shell', async () => {
    const stdin = new PassThrough();
    const seen = outputWatcher();
    const running = runCliInProcess(['terminal', 'sb-1', ...withKey()], {
      configDir,
      stdin,
      onStdout: seen.update,
    });
    await seen.until((o) => o.startsWith('$ '));
    stdin.write('exit\r');
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.err).toContain('[terminal closed]');
  });
});
