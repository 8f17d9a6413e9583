// The devnet CLI as a user runs it: up, up again, status, SIGTERM, --detach + down, --help, bad input.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { rpcChainId } from './anvil.ts';
import { runDevnetCli } from './cli.ts';
import { REPO_ROOT } from './errors.ts';
import type { DevnetInfo } from './state.ts';

const CLI = join(REPO_ROOT, 'devnet/main.ts');
/** node with tsx's loader: one process, so a signal reaches the CLI itself (not a wrapper). */
const NODE_TS = ['--import', 'tsx'];
const dir = mkdtempSync(join(tmpdir(), 'devnet-cli-test-'));
const started: ChildProcess[] = [];
/** Every anvil a test saw start: killed at the end even if a test failed before stopping it. */
const anvils = new Set<number>();
afterAll(() => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
  for (const pid of anvils) {
    try {
      // only if that pid is still an anvil (not a number the kernel has handed on)
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('anvil')) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_TS, CLI, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
  via: 'node' | 'tsx-wrapper' = 'node',
): Promise<{ child: ChildProcess; out: () => string; exit: Promise<number | null> }> {
  const args = [CLI, 'up', '--port', '0', '--state', stateFile];
  const child = spawn(
    via === 'node' ? process.execPath : join(REPO_ROOT, 'node_modules/.bin/tsx'),
    via === 'node' ? [...NODE_TS, ...args] : args,
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
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

/** The anvil pid the CLI's progress names. */
function anvilPid(out: string): number {
  const m = /anvil \(pid (\d+)\) answers on/.exec(out);
  if (!m) throw new Error(`no anvil pid in: ${out}`);
  anvils.add(Number(m[1]));
  return Number(m[1]);
}

/** Whether process `pid` has exited (a zombie counts as exited), waiting up to `ms`. */
async function processGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return true;
    }
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
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

  it('leaves no anvil behind when the process running `up` is killed hard', {
    timeout: 180_000,
  }, async () => {
    // Directly: the kernel's parent-death signal takes anvil down with the node process.
    const direct = await upForeground(join(dir, 'kill-direct', 'devnet.json'));
    direct.child.kill('SIGKILL');
    await direct.exit.catch(() => {});
    expect(await processGone(anvilPid(direct.out()), 15_000)).toBe(true);

    // Through the tsx wrapper (what `npm run demo` runs): the orphaned CLI notices and stops anvil.
    const wrapped = await upForeground(join(dir, 'kill-wrapper', 'devnet.json'), 'tsx-wrapper');
    wrapped.child.kill('SIGKILL');
    await wrapped.exit.catch(() => {});
    expect(await processGone(anvilPid(wrapped.out()), 15_000)).toBe(true);
  });

  it('leaves no anvil behind when the tsx wrapper is killed while `up` is still starting', {
    timeout: 180_000,
  }, async () => {
    // The wrapper dies before the CLI has printed anything but its first progress line: the CLI
    // must still notice it was orphaned (it once only looked at its parent after start-up, and
    // so took the reaper for its parent and ran on for ever).
    const stateFile = join(dir, 'kill-early', 'devnet.json');
    const child = spawn(
      join(REPO_ROOT, 'node_modules/.bin/tsx'),
      [CLI, 'up', '--port', '0', '--state', stateFile],
      {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    started.push(child);
    const pid = await new Promise<number>((resolve, reject) => {
      let text = '';
      child.stderr?.on('data', (d: Buffer) => {
        text += d;
        const m = /anvil \(pid (\d+)\) answers on/.exec(text);
        if (m) resolve(anvilPid(m[0]));
      });
      child.on('exit', (code) => reject(new Error(`up exited early (${code}): ${text}`)));
    });
    child.kill('SIGKILL');
    // It finishes setting the devnet up, then stops it: allow for a slow deploy on a busy machine.
    // The process itself is watched (an RPC call timing out on a busy machine is no proof).
    expect(await processGone(pid, 120_000)).toBe(true);
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
    const cli = async (...argv: string[]) => {
      let out = '';
      let err = '';
      const code = await runDevnetCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
      return { code, out, err };
    };
    const help = await cli('--help');
    expect(help.code).toBe(0);
    for (const word of ['up', 'status', 'down', '--port', '--state', '--detach'])
      expect(help.out).toContain(word);
    const badPort = await cli('up', '--port', 'eighty');
    expect(badPort.code).toBe(2);
    expect(badPort.err).toContain('--port must be a port number');
    const badCommand = await cli('launch');
    expect(badCommand.code).toBe(2);
    expect(badCommand.err).toContain('unknown command "launch"');
    const badFlag = await cli('up', '--colour');
    expect(badFlag.code).toBe(2);
    expect(badFlag.err).toContain("Unknown option '--colour'");
    const noDevnet = await cli('status', '--state', join(dir, 'nothing', 'devnet.json'));
    expect(noDevnet.code).toBe(1);
    expect(noDevnet.err).toContain('no devnet');
    // The real-protocol mode without its files: exit 2, saying what is missing and how to make them.
    for (const w of ['--tangle-state', '--tangle-deployment', 'TANGLE_STATE_FILE'])
      expect(help.out).toContain(w);
    const state = join(dir, 'no-such.state.json');
    const half = await cli(
      'up',
      '--fresh',
      '--tangle-state',
      state,
      '--state',
      join(dir, 'rt', 'devnet.json'),
    );
    expect(half.code).toBe(2);
    expect(half.err).toContain('--tangle-deployment or TANGLE_DEPLOYMENT_FILE');
    expect(half.err).toContain(`${state} (it does not exist)`);
    expect(half.err).toContain('script/LocalTestnet.s.sol');
    writeFileSync(state, '{}');
    const dep = join(dir, 'deployment.json');
    writeFileSync(dep, JSON.stringify({ contracts: { tangle: '0x1234' } }));
    const bad = await cli('up', '--fresh', '--tangle-state', state, '--tangle-deployment', dep);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('is not a Tangle deployment description');
    expect(existsSync(join(dir, 'rt', 'devnet.json'))).toBe(false);
  });

  it('refuses a port where another chain already answers, saying which', { timeout: 120_000 }, async () => {
    const port = new URL(inject('devnet').rpcUrl).port; // the shared test devnet
    const other = await run(['up', '--fresh', '--port', port, '--state', join(dir, 'busy', 'devnet.json')]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`port ${port} already serves a chain`);
    expect(existsSync(join(dir, 'busy', 'devnet.json'))).toBe(false);
  });
});
