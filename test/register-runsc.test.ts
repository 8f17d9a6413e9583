// scripts/register-runsc.mjs on a scratch daemon.json (no reload: the shared engine is left alone):
// it adds runtimes.runsc and keeps every other key, says what it changed, changes nothing the
// second time, and leaves a daemon.json that is not JSON exactly as it is.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'register-runsc.mjs');
const run = (config: string) =>
  spawnSync(process.execPath, [SCRIPT, '--config', config, '--runsc', '/usr/bin/runsc', '--no-reload'], {
    encoding: 'utf8',
  });

describe('register-runsc', () => {
  it('adds runtimes.runsc beside the existing keys, once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rr-'));
    const config = join(dir, 'daemon.json');
    const before = { 'log-driver': 'json-file', runtimes: { other: { path: '/bin/other' } }, debug: true };
    writeFileSync(config, JSON.stringify(before));
    const first = run(config);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toContain('added runtimes.runsc');
    const after = JSON.parse(readFileSync(config, 'utf8'));
    expect(after).toEqual({
      ...before,
      runtimes: {
        other: { path: '/bin/other' },
        runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--host-uds=create', '--network=host'] },
      },
    });
    const text = readFileSync(config, 'utf8');
    const second = run(config);
    expect(second.status).toBe(0);
    expect(second.stderr).toContain('already registered');
    expect(readFileSync(config, 'utf8')).toBe(text);
  });

  it('creates a missing daemon.json; leaves one that is not JSON untouched and fails saying so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rr-'));
    const fresh = join(dir, 'docker', 'daemon.json');
    expect(run(fresh).status).toBe(0);
    expect(Object.keys(JSON.parse(readFileSync(fresh, 'utf8')).runtimes)).toEqual(['runsc']);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"debug": tr');
    const r = run(broken);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/is not valid JSON .*leaves it as it is/);
    expect(readFileSync(broken, 'utf8')).toBe('{"debug": tr');
  });
});
