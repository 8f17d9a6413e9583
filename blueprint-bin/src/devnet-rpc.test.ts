// `agent-sandbox-operator devnet` and the RPC variables (issue 29): HTTP_RPC_URL is honoured when it
// reaches the devnet's chain (here through a TCP proxy in front of the shared devnet's anvil), and
// refused with a clear message when it does not answer or reaches another chain.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '..', 'bin', 'agent-sandbox-operator.mjs');
const devnet = inject('devnet');
const stateFile = inject('devnetStateFile');

let dir: string;
const servers: Array<Server | TcpServer> = [];

function listen(s: Server | TcpServer): Promise<string> {
  servers.push(s);
  return new Promise((res) =>
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      res(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`);
    }),
  );
}

function devnetCommand(env: Record<string, string>): {
  child: ChildProcess;
  exit: Promise<{ code: number | null; output: string }>;
  line: (msg: string) => Promise<Record<string, unknown>>;
} {
  const child = spawn(
    process.execPath,
    [BIN, 'devnet', '--operator', 'operator2', '--devnet-state', stateFile],
    {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/tmp',
        LOG_LEVEL: 'info',
        DATA_DIR: join(dir, 'data'),
        OPERATOR_API_PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const waiters: Array<{ msg: string; go: (l: Record<string, unknown>) => void }> = [];
  const onData = (d: Buffer) => {
    output += d;
    for (const text of output.split('\n')) {
      if (!text.startsWith('{')) continue;
      const l = JSON.parse(text) as Record<string, unknown>;
      for (const w of waiters.splice(0)) {
        if (l['msg'] === w.msg) w.go(l);
        else waiters.push(w);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<{ code: number | null; output: string }>((res) =>
    child.on('exit', (code) => res({ code, output })),
  );
  return {
    child,
    exit,
    line: (msg) =>
      Promise.race([
        new Promise<Record<string, unknown>>((go) => waiters.push({ msg, go })),
        exit.then(({ code, output: o }) => {
          throw new Error(`devnet exited (${code}) before "${msg}":\n${o}`);
        }),
      ]),
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devnet-rpc-'));
});
afterAll(async () => {
  for (const s of servers) s.close();
  await rm(dir, { recursive: true, force: true });
});

describe('agent-sandbox-operator devnet with HTTP_RPC_URL', () => {
  it('an HTTP_RPC_URL that does not answer is refused, naming the variable and the devnet', async () => {
    const closed = createServer();
    const url = await listen(closed);
    closed.close();
    const { exit } = devnetCommand({ HTTP_RPC_URL: url });
    const { code, output } = await exit;
    expect(code).toBe(2);
    expect(output).toContain(`HTTP_RPC_URL (${url}) does not answer`);
    expect(output).toContain(`devnet's anvil at ${devnet.rpcUrl}`);
  });

  it('an HTTP_RPC_URL on another chain is refused', async () => {
    // A JSON-RPC server for another chain: chain id 1, no code anywhere.
    const other = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        const calls = [JSON.parse(body)].flat() as Array<{ id: number; method: string }>;
        const answer = calls.map((c) => ({
          jsonrpc: '2.0',
          id: c.id,
          result: c.method === 'eth_chainId' ? '0x1' : '0x',
        }));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(Array.isArray(JSON.parse(body)) ? answer : answer[0]));
      });
    });
    const url = await listen(other);
    const { code, output } = await devnetCommand({ HTTP_RPC_URL: url }).exit;
    expect(code).toBe(2);
    expect(output).toContain(`reaches chain 1, not the devnet's ${devnet.chainId}`);
  });

  it("an HTTP_RPC_URL in front of the devnet's anvil is the one the operator uses", async () => {
    const target = new URL(devnet.rpcUrl);
    let connections = 0;
    const proxy = createTcpServer((c) => {
      connections++;
      const up = connect(Number(target.port), target.hostname);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    const url = await listen(proxy);
    const run = devnetCommand({ HTTP_RPC_URL: url });
    try {
      const ready = await run.line('devnet ready; starting operator2');
      expect(ready['rpc']).toBe(url);
      expect(ready['devnetRpc']).toBe(devnet.rpcUrl);
      expect(connections).toBeGreaterThan(0);
    } finally {
      run.child.kill('SIGTERM');
      await run.exit;
    }
  });
});
