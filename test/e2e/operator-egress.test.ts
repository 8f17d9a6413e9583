// End to end: the operator program refuses to start under SANDBOX_EGRESS=public when it cannot
// install its egress rules (here: no iptables on its PATH), saying why and what to do, and leaves
// no rule behind; with SANDBOX_EGRESS=none (loopback-only sandboxes) it starts without them.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { chainNames } from '../../runtime/src/docker/egress-rules.ts';
import { operatorDir } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-egress-${Date.now().toString(36)}`;
const dirs: string[] = [];
const children: ChildProcess[] = [];

async function operatorEnv(egress: string, path: string): Promise<Record<string, string>> {
  const { dir: dataDir, keyFile } = await operatorDir(devnet, RUN);
  dirs.push(dataDir);
  return {
    PATH: path,
    HOME: process.env['HOME'] ?? '/tmp',
    HTTP_RPC_URL: devnet.rpcUrl,
    TANGLE_CONTRACT: devnet.contracts.tangle,
    BLUEPRINT_ID: `${devnet.blueprints.cloud}`,
    SERVICE_ID: `${devnet.services.cloud}`,
    DATA_DIR: dataDir,
    KEYSTORE_URI: keyFile,
    TEST_MODE: 'true',
    SESSION_AUTH_SECRET: randomBytes(32).toString('hex'),
    OPERATOR_API_PORT: '0',
    OPERATOR_ID: `${RUN}-${egress}`,
    SANDBOX_IMAGE: image,
    SANDBOX_EXTRA_LABELS: 'agent-sandbox.test=1',
    SANDBOX_EGRESS: egress,
    LOG_LEVEL: 'info',
  };
}

/** Runs the operator until it is ready (then SIGTERMs it) or exits; returns its exit code and output. */
function runOperator(
  env: Record<string, string>,
): Promise<{ code: number | null; ready: boolean; out: string }> {
  const child = spawnOperator({ env, via: 'main' });
  children.push(child);
  let out = '';
  let ready = false;
  const onData = (d: Buffer) => {
    out += d.toString();
    if (!ready && out.includes('"event":"ready"')) {
      ready = true;
      child.kill('SIGTERM');
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return new Promise((res) => child.on('exit', (code) => res({ code, ready, out })));
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('operator egress rules at start', () => {
  it('under public without iptables: refuses to start, says why and what to do, installs nothing', async () => {
    // Only node's own directory: no iptables (nor anything else) on the PATH.
    const env = await operatorEnv('public', dirname(process.execPath));
    const r = await runOperator(env);
    expect(r.ready).toBe(false);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/cannot install the sandbox egress rules/);
    expect(r.out).toMatch(/SANDBOX_EGRESS=open/);
    const { forward, input } = chainNames(env['OPERATOR_ID']!);
    const rules = execFileSync('iptables', ['-S']).toString();
    expect(rules).not.toContain(forward);
    expect(rules).not.toContain(input);
  });

  it('under public with iptables: starts, and its rules are gone after SIGTERM', async () => {
    const env = await operatorEnv('public', process.env['PATH'] ?? '');
    const r = await runOperator(env);
    expect(r.ready).toBe(true);
    expect(r.code, r.out.slice(-2000)).toBe(0);
    const { forward } = chainNames(env['OPERATOR_ID']!);
    expect(execFileSync('iptables', ['-S']).toString()).not.toContain(forward);
  });

  it('under none without iptables: starts (no bridge, no rules: the sandboxes get no network at all)', async () => {
    const env = await operatorEnv('none', dirname(process.execPath));
    env['SANDBOX_SOCKET_DIR'] = `/run/${RUN}`;
    dirs.push(env['SANDBOX_SOCKET_DIR']);
    const r = await runOperator(env);
    expect(r.ready, r.out.slice(-2000)).toBe(true);
    expect(r.code, r.out.slice(-2000)).toBe(0);
  });
});
