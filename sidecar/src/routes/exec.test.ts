// POST /terminals/commands: uid, env, cwd, timeouts, output floods, binary output, bad input.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

let fx: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture({ SANDBOX_SECRET: 'from-sandbox-env' });
});
afterAll(() => fx.close());

const exec = (body: unknown) => fx.call('POST', '/terminals/commands', body);

describe('exec', () => {
  it('runs as uid/gid 1000 in the workspace with sandbox and request env, without the sidecar token', async () => {
    const r = await exec({
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      command: 'echo "$(id -u):$(id -g) $PWD $SANDBOX_SECRET $EXTRA ${SIDECAR_AUTH_TOKEN:-none}"',
      env: { EXTRA: 'from-request' },
    });
    expect(r.status).toBe(200);
    expect(r.json.success).toBe(true);
    expect(r.json.result.stdout.trim()).toBe(`1000:1000 ${fx.workspace} from-sandbox-env from-request none`);
    expect(r.json.exitCode).toBe(0);
    expect(r.json.stdout).toBe(r.json.result.stdout);
    expect(typeof r.json.result.duration).toBe('number');
  });

  it('refuses a platform-owned name in the request env (400 naming the key) instead of running', async () => {
    for (const k of ['SIDECAR_AUTH_TOKEN', 'LD_PRELOAD', 'NODE_OPTIONS', 'BASH_ENV']) {
      const r = await exec({ command: 'echo ran', env: { [k]: 'x' } });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('INVALID_ENV');
      expect(r.json.error.message).toContain(`"${k}"`);
    }
  });

  it('honours cwd (relative to the workspace) and reports non-zero exits as success', async () => {
    await mkdir(join(fx.workspace, 'sub'), { recursive: true });
    const r = await exec({ command: 'pwd; echo oops >&2; exit 7', cwd: 'sub' });
    expect(r.status).toBe(200);
    expect(r.json.result).toMatchObject({
      exitCode: 7,
      stdout: `${join(fx.workspace, 'sub')}\n`,
      stderr: 'oops\n',
    });
  });

  it('rejects a missing or empty command with 400 INVALID_COMMAND', async () => {
    for (const body of [{}, { command: '' }, { command: 42 }]) {
      const r = await exec(body);
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('INVALID_COMMAND');
    }
  });

  it('rejects a cwd that does not exist and a bad timeout with 400', async () => {
    expect((await exec({ command: 'true', cwd: 'does/not/exist' })).json.error.code).toBe('INVALID_CWD');
    expect((await exec({ command: 'true', timeout_ms: -1 })).json.error.code).toBe('INVALID_REQUEST');
    expect((await exec({ command: 'true', timeout: -1 })).json.error.code).toBe('INVALID_REQUEST');
  });

  it('kills a command that never ends at its timeout (TERM, then KILL) with exit code 124', async () => {
    const r = await exec({
      command: "trap '' TERM; echo begun; while :; do sleep 0.1; done",
      timeout_ms: 300,
    });
    expect(r.status).toBe(200);
    expect(r.json.result.exitCode).toBe(124);
    expect(r.json.result.stdout).toBe('begun\n');
    expect(r.json.result.duration).toBeGreaterThanOrEqual(300);
  });

  it('still honours `timeout`, the name operators released before `timeout_ms` send; `timeout_ms` wins', async () => {
    const old = await exec({ command: 'sleep 30', timeout: 200 });
    expect(old.json.result.exitCode).toBe(124);
    const both = await exec({ command: 'sleep 30', timeout_ms: 200, timeout: 60_000 });
    expect(both.json.result.exitCode).toBe(124);
  });

  it('kills the whole process group on timeout', async () => {
    const r = await exec({ command: '(sleep 313 &) ; sleep 313', timeout_ms: 200 });
    expect(r.json.result.exitCode).toBe(124);
    await new Promise((res) => setTimeout(res, 300));
    const ps = await exec({ command: 'pgrep -f "[s]leep 313" || echo none' });
    expect(ps.json.result.stdout.trim()).toBe('none');
  });

  it('bounds an output flood to the limit with a truncation marker', async () => {
    const r = await exec({ command: 'head -c 5000000 /dev/zero | tr "\\0" a' });
    expect(r.status).toBe(200);
    const out: string = r.json.result.stdout;
    expect(out.length).toBeLessThan(1024 * 1024 + 200);
    expect(out.startsWith('aaaa')).toBe(true);
    expect(out).toMatch(/\[output truncated: 3951424 more bytes not shown\]/);
  });

  it('returns binary output as valid UTF-8 JSON', async () => {
    const r = await exec({ command: "printf 'ok\\377\\376\\000end'" });
    expect(r.status).toBe(200);
    expect(r.json.result.stdout).toBe('ok\uFFFD\uFFFD\u0000end');
  });
});
