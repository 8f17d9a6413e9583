// Starts and stops the devnet's anvil process, so that no anvil outlives the program that started it.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DEVNET_MNEMONIC } from './accounts.ts';
import { DevnetError, REPO_ROOT } from './errors.ts';

export const DEVNET_CHAIN_ID = 31337;
const HOST = '127.0.0.1';

export interface AnvilOptions {
  /** 0 picks a free port. */
  port: number;
  /** Detached: anvil outlives this process (its stdout/stderr go to `logFile`). */
  detached?: boolean;
  logFile?: string;
  log?: (line: string) => void;
  /** Start from this saved state (`anvil --load-state`): the real-protocol mode's tnt-core deployment. */
  loadState?: string | undefined;
}

export interface AnvilHandle {
  pid: number;
  port: number;
  rpcUrl: string;
  wsUrl: string;
  /** Resolves when anvil exits, for whatever reason. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The native anvil binary. node_modules/.bin/anvil is a Node wrapper that spawns it; going to the
 * binary directly keeps one process (a SIGKILLed wrapper would orphan its child), and the wrapper
 * is the fallback.
 */
export function anvilBinary(): string {
  const scope = join(REPO_ROOT, 'node_modules/@foundry-rs');
  if (existsSync(scope)) {
    for (const dir of readdirSync(scope)) {
      const bin = join(scope, dir, 'bin/anvil');
      if (dir.startsWith('anvil-') && existsSync(bin)) return bin;
    }
  }
  const wrapper = join(REPO_ROOT, 'node_modules/.bin/anvil');
  if (existsSync(wrapper)) return wrapper;
  throw new DevnetError(
    'ANVIL_MISSING',
    'anvil is not installed: run `npm install` (it ships in @foundry-rs/anvil)',
  );
}

/** Asks the kernel for a free loopback port (released at once; anvil binds it right after). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** eth_chainId at `rpcUrl`, or undefined when nothing answers there (quickly). */
export async function rpcChainId(rpcUrl: string, timeoutMs = 1000): Promise<number | undefined> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await res.json()) as { result?: string };
    return typeof body.result === 'string' ? Number(BigInt(body.result)) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts anvil and resolves once its RPC answers. A free port is retried when another took it. */
export async function startAnvil(opts: AnvilOptions): Promise<AnvilHandle> {
  const attempts = opts.port === 0 ? 3 : 1;
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    const port = opts.port === 0 ? await freePort() : opts.port;
    try {
      return await startOnce(port, opts);
    } catch (err) {
      last = err;
      // A free port can be taken between our probe and anvil's bind: try another one.
      if (!(err instanceof DevnetError) || !['ANVIL_EXITED', 'PORT_IN_USE'].includes(err.code)) throw err;
    }
  }
  throw last;
}

async function startOnce(port: number, opts: AnvilOptions): Promise<AnvilHandle> {
  const rpcUrl = `http://${HOST}:${port}`;
  const busy = await rpcChainId(rpcUrl, 500);
  if (busy !== undefined) {
    throw new DevnetError(
      'PORT_IN_USE',
      `port ${port} already serves a chain (chain id ${busy}); stop it, or pick another port (--port)`,
    );
  }
  const args = [
    '--host',
    HOST,
    '--port',
    String(port),
    '--chain-id',
    String(DEVNET_CHAIN_ID),
    '--mnemonic',
    DEVNET_MNEMONIC,
    '--accounts',
    '10',
    '--silent',
    ...(opts.loadState ? ['--load-state', opts.loadState] : []),
  ];
  const child = spawnAnvil(anvilBinary(), args, opts);
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    tail.push(...chunk.toString().split('\n').filter(Boolean));
    tail.splice(0, Math.max(0, tail.length - 20));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  let exited: { code: number | null; signal: string | null } | undefined;
  const exitedP = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
  });
  // A normal exit of this process (also process.exit) takes anvil with it; a hard death is covered
  // by the parent-death signal set in spawnAnvil.
  const onExit = () => {
    if (!exited) child.kill('SIGKILL');
  };
  if (!opts.detached) process.on('exit', onExit);

  const deadline = Date.now() + 15_000;
  while ((await rpcChainId(rpcUrl, 500)) !== DEVNET_CHAIN_ID) {
    if (exited) {
      process.off('exit', onExit);
      if (/address already in use|in use/i.test(tail.join(' '))) {
        throw new DevnetError(
          'PORT_IN_USE',
          `port ${port} is taken by another program; stop it, or pick another port (--port)`,
        );
      }
      throw new DevnetError(
        'ANVIL_EXITED',
        `anvil exited (code ${exited.code}, signal ${exited.signal}) before answering on ${rpcUrl}: ` +
          (tail.join(' | ') || 'no output'),
      );
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      process.off('exit', onExit);
      throw new DevnetError(
        'ANVIL_TIMEOUT',
        `anvil did not answer on ${rpcUrl} within 15 s: ${tail.join(' | ')}`,
      );
    }
    await sleep(50);
  }
  if (opts.detached) child.unref();
  try {
    opts.log?.(`anvil (pid ${child.pid}) answers on ${rpcUrl}`);
  } catch {
    // a failing logger must not cost us the handle (a detached anvil would be left running)
  }

  return {
    pid: child.pid ?? 0,
    port,
    rpcUrl,
    wsUrl: `ws://${HOST}:${port}`,
    exited: exitedP,
    async stop() {
      process.off('exit', onExit);
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exitedP;
      clearTimeout(timer);
    },
  };
}

function spawnAnvil(bin: string, args: string[], opts: AnvilOptions): ChildProcess {
  if (opts.detached) {
    // Detached on purpose: no parent-death signal; stopped later by pid (`devnet down`).
    const fd = openSync(opts.logFile ?? '/dev/null', 'a');
    return spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
  }
  // setpriv (util-linux, in every Debian) makes the kernel SIGKILL anvil when this process dies,
  // however it dies; without it a small watchdog does the same by polling.
  // Its own process group (detached) so a terminal's Ctrl-C reaches only us, and we stop anvil
  // in order instead of racing its exit against our shutdown.
  const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
  if (setpriv) {
    return spawn(setpriv, ['--pdeathsig', 'KILL', '--', bin, ...args], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid) startWatchdog(child.pid);
  return child;
}

/** A detached Node process that kills `childPid` once this process is gone. */
function startWatchdog(childPid: number): void {
  const script = `const [p,c]=process.argv.slice(1).map(Number);const alive=(x)=>{try{process.kill(x,0);return true}catch{return false}};setInterval(()=>{if(!alive(c))process.exit(0);if(!alive(p)){try{process.kill(c,'SIGKILL')}catch{}process.exit(0)}},500);`;
  spawn(process.execPath, ['-e', script, String(process.pid), String(childPid)], {
    detached: true,
    stdio: 'ignore',
  }).unref();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
