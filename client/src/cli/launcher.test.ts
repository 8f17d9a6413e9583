// The installed launcher (bin/agent-sandbox.mjs) runs the CLI as a real process: help, exit codes
// and the one-line error reach the caller's shell unchanged.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const launcher = fileURLToPath(new URL('../../bin/agent-sandbox.mjs', import.meta.url));
const run = (...args: string[]) =>
  spawnSync(process.execPath, [launcher, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      AGENT_SANDBOX_OPERATOR: '',
      AGENT_SANDBOX_CONFIG_DIR: '/nonexistent/agent-sandbox',
    },
    timeout: 30_000,
  });

describe('bin/agent-sandbox.mjs', () => {
  it('prints help and exits 0', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: agent-sandbox <command>');
  });

  it('exits 1 with one line on stderr for a usage error', () => {
    const r = run('get');
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('agent-sandbox: get: missing <id>; usage: agent-sandbox get <id> (code USAGE)\n');
  });

  it('exits 5 when the operator is unreachable', () => {
    const r = run('list', '--operator', 'http://127.0.0.1:9', '--private-key', `0x${'11'.repeat(32)}`);
    expect(r.status).toBe(5);
  });
});
