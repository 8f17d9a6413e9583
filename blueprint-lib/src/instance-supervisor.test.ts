// The instance keeper's status while the instance is healthy: /health shows it, so a check of a
// ready instance must never flip it back to "provisioning" while the tick reads the chain. Found on
// tnt-core's real Tangle (slower reads than the stand-in): /health said provisioning, reported.
// The chain here is a local JSON-RPC server answering eth_call with `true`, one read held open.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { encodeAbiParameters } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InstanceSupervisor } from './instance-supervisor.ts';

const TRUE = encodeAbiParameters([{ type: 'bool' }], [true]);
let server: Server;
let url = '';
let calls = 0;
let holdCall = 0;
let release: (() => void) | undefined;
let held: Promise<void> | undefined;
let markHeld: (() => void) | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const msgs = JSON.parse(body) as Array<{ id: number; method: string }> | { id: number; method: string };
      const list = Array.isArray(msgs) ? msgs : [msgs];
      const answers = [];
      for (const m of list) {
        if (m.method === 'eth_call') {
          calls++;
          if (calls === holdCall) {
            markHeld?.();
            await new Promise<void>((r) => (release = r));
          }
        }
        answers.push({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_chainId' ? '0x7a69' : TRUE });
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(msgs) ? answers : answers[0]));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('InstanceSupervisor status', () => {
  it('stays ready through a later check of a healthy, reported instance', async () => {
    const record = { id: 'sbx-1', callId: 'instance-7', state: 'running' };
    const sup = new InstanceSupervisor({
      mode: 'instance',
      httpRpcUrl: url,
      tangle: '0x0000000000000000000000000000000000000001',
      blueprint: '0x0000000000000000000000000000000000000002',
      serviceId: 7n,
      account: privateKeyToAccount(`0x${'11'.repeat(32)}`),
      policy: {} as never,
      operatorApiUrl: 'http://127.0.0.1:1',
      log: pino({ level: 'silent' }),
      runtime: {
        list: () => [record],
        create: () => Promise.reject(new Error('no create expected')),
        delete: () => Promise.reject(new Error('no delete expected')),
        restartIfEngineStopped: async () => ({ state: 'running' }),
      },
      reportDeprovisioned: () => Promise.reject(new Error('no deprovision expected')),
      checkIntervalMs: 60_000,
      maxBackoffMs: 60_000,
    });
    await sup.tick();
    expect(sup.status()).toMatchObject({ state: 'ready', sandboxId: 'sbx-1', reportedOnChain: true });
    // The second tick: hold its last read (isOperatorProvisioned after the sandbox check).
    held = new Promise<void>((r) => (markHeld = r));
    holdCall = calls + 4;
    const second = sup.tick();
    await held;
    expect(sup.status()).toMatchObject({ state: 'ready', sandboxId: 'sbx-1', reportedOnChain: true });
    release?.();
    await second;
    expect(sup.status()).toMatchObject({ state: 'ready', reportedOnChain: true, failures: 0 });
  });
});
