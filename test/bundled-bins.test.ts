// The published programs as installed: client/dist/cli.mjs and blueprint-bin/dist/main.mjs, the
// bundles scripts/build-bins.mjs makes (rebuilt here from the current sources), run by plain
// node with no TypeScript loader: --help and one real command each.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleNodeFlags } from '@agent-sandbox/blueprint-bin/testing';
import { EncryptedStore } from '@agent-sandbox/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'client', 'dist', 'cli.mjs');
const OPERATOR = join(ROOT, 'blueprint-bin', 'dist', 'main.mjs');
let dir: string;

const run = (bin: string, args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    // No NODE_OPTIONS: vitest's own loader must not be what makes the bundle run.
    env: { PATH: process.env['PATH'] ?? '', HOME: dir, LOG_LEVEL: 'warn', ...env },
    timeout: 60_000,
  });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'asbx-bins-'));
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-bins.mjs')], { cwd: ROOT, stdio: 'pipe' });
}, 180_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('bundled bins', () => {
  it('package.json bins point at the bundles, which are plain JavaScript', () => {
    const pkg = (p: string) => JSON.parse(readFileSync(join(ROOT, p, 'package.json'), 'utf8'));
    expect(pkg('client').bin['agent-sandbox']).toBe('./dist/cli.mjs');
    expect(pkg('blueprint-bin').bin['agent-sandbox-operator']).toBe('./dist/main.mjs');
    for (const f of [CLI, OPERATOR]) {
      const text = readFileSync(f, 'utf8');
      expect(text).not.toMatch(/from\s*"[^"]*\.ts"/);
    }
    expect(readFileSync(CLI, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    // The operator's shebang carries its V8 flag (a small young generation: its idle RSS), and
    // the test/bench spawner reads it from there, so `node main.mjs` runs as the bin does.
    expect(
      readFileSync(OPERATOR, 'utf8').startsWith('#!/usr/bin/env -S node --max-semi-space-size=2\n'),
    ).toBe(true);
    expect(bundleNodeFlags(OPERATOR)).toEqual(['--max-semi-space-size=2']);
    expect(bundleNodeFlags(CLI)).toEqual([]);
  });

  it('agent-sandbox-operator runs as an executable (its shebang, with the flag, works here)', () => {
    const help = spawnSync(OPERATOR, ['--help'], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', HOME: dir },
      timeout: 60_000,
    });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('agent-sandbox-operator');
  });

  it('agent-sandbox: --help, and a command that reaches (an absent) operator', () => {
    const help = run(CLI, ['--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: agent-sandbox <command>');
    const list = run(
      CLI,
      ['list', '--operator', 'http://127.0.0.1:9', '--private-key', `0x${'11'.repeat(32)}`],
      {
        AGENT_SANDBOX_CONFIG_DIR: join(dir, 'cli-config'),
      },
    );
    expect(list.status, list.stderr).toBe(5);
    expect(list.stderr).toMatch(/^agent-sandbox: /);
  });

  it('agent-sandbox-operator: --help, and status over a real encrypted store', async () => {
    const help = run(OPERATOR, ['--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: agent-sandbox-operator <command>');
    const dataDir = join(dir, 'operator-data');
    const secret = '34'.repeat(32);
    const store = await EncryptedStore.open({ dir: join(dataDir, 'store'), secret });
    await store.collection('handled-calls').put('0:7', { job: 0, outcome: 'skip', at: 1 });
    await store.close();
    const status = run(OPERATOR, ['status', '--local'], { DATA_DIR: dataDir, SESSION_AUTH_SECRET: secret });
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ dataDir, handledCalls: 1 });
  });
});
