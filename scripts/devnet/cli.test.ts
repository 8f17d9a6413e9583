// The devnet CLI as a user runs it: up, up again, status, SIGTERM, --detach + down, --help, bad input.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { rpcChainId } from './anvil.ts';
import { REPO_ROOT } from './errors.ts';
import type { DevnetInfo } from './state.ts';

const TSX = join(REPO_ROOT, 'node_modules/.bin/tsx');
const CLI = join(REPO_ROOT, 'scripts/devnet.ts');
const dir = mkdtempSync(join(tmpdir(), 'devnet-cli-test-'));
const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(TSX, [CLI, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `up` in the foreground and resolves once it says it is running. */
function upForeground(
  stateFile: string,
): Promise<{ child: ChildProcess; out: () => string; exit: Promise<number | null> }> {
  const child = spawn(TSX, [CLI, 'up', '--port', '0', '--state', stateFile], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let text = '';
  const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      text += d;
      // stdout (the summary) and stderr (progress) are separate pipes: wait for both.
      if (text.includes('Ctrl-C stops it') && text.includes('everything above'))
        resolve({ child, out: () => text, exit });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exit.then((code) => reject(new Error(`up exited early (${code}): ${text}`)));
  });
}

describe('devnet CLI', () => {
  it('up runs in the foreground; a second up and status see it; SIGTERM stops anvil and cleans up', {
    timeout: 180_000,
  }, async () => {
    const stateFile = join(dir, 'fg', 'devnet.json');
    const up = await upForeground(stateFile);
    expect(up.out()).toContain('chain id   31337');
    expect(up.out()).toContain("anvil's public dev keys");
    const info = JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetInfo;
    expect(await rpcChainId(info.rpcUrl)).toBe(31337);

    const again = await run(['up', '--port', '0', '--state', stateFile]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('devnet already running');
    expect(again.stdout).toContain(info.contracts.tangle);

    const status = await run(['status', '--state', stateFile, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual(info);

    up.child.kill('SIGTERM');
    expect(await up.exit).toBe(0);
    expect(up.out()).toContain('stopped');
    expect(existsSync(stateFile)).toBe(false);
    expect(await rpcChainId(info.rpcUrl, 300)).toBeUndefined();

    const after = await run(['status', '--state', stateFile]);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('no devnet');
  });

  it('up --detach returns while anvil keeps running, and down stops it', { timeout: 120_000 }, async () => {
    const stateFile = join(dir, 'detached', 'devnet.json');
    const up = await run(['up', '--detach', '--port', '0', '--state', stateFile]);
    expect(up.code).toBe(0);
    const info = JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetInfo;
    expect(await rpcChainId(info.rpcUrl)).toBe(31337);

    const down = await run(['down', '--state', stateFile]);
    expect(down.code).toBe(0);
    expect(down.stderr).toContain('stopped the devnet');
    expect(await rpcChainId(info.rpcUrl, 300)).toBeUndefined();
    expect(existsSync(stateFile)).toBe(false);
  });

  it('--help explains the commands; bad input is refused with exit code 2', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    for (const word of ['up', 'status', 'down', '--port', '--state', '--detach'])
      expect(help.stdout).toContain(word);

    const badPort = await run(['up', '--port', 'eighty']);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('--port must be a port number');

    const badCommand = await run(['launch']);
    expect(badCommand.code).toBe(2);
    expect(badCommand.stderr).toContain('unknown command "launch"');

    const badFlag = await run(['up', '--colour']);
    expect(badFlag.code).toBe(2);
  });

  it('refuses a port where another chain already answers, saying which', { timeout: 120_000 }, async () => {
    const port = new URL(inject('devnet').rpcUrl).port; // the shared test devnet
    const other = await run(['up', '--fresh', '--port', port, '--state', join(dir, 'busy', 'devnet.json')]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`port ${port} already serves a chain`);
    expect(existsSync(join(dir, 'busy', 'devnet.json'))).toBe(false);
  });
});
