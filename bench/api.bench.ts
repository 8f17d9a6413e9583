// Benchmark: the operator API. (1) authenticated GET /api/sandboxes throughput and latency under
// wrk, against a floor measured in the same run (a bare Hono route on the same server stack);
// (2) exec through the API vs exec straight to the sidecar (same SidecarClient), on a real sandbox
// container from the project image. Prints median/p99 and ratios.
// Run: npx tsx bench/api.bench.ts [--seconds 10] [--connections 32] [--execs 300]
// Needs: wrk (apt-get install -y wrk), a Docker engine and the sandbox image (built if missing).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import Docker from 'dockerode';
import { Hono } from 'hono';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createOperatorApi } from '../runtime/src/api/app.ts';
import { serveOperatorApi } from '../runtime/src/api/serve.ts';
import { createApiSidecars } from '../runtime/src/api/sidecars.ts';
import { MemorySandboxes, makeRecord } from '../runtime/src/api/testing/memory-sandboxes.ts';
import { SessionAuth } from '../runtime/src/auth/index.ts';
import { SidecarClient } from '../runtime/src/sidecar-client/index.ts';
import { EncryptedStore } from '../runtime/src/store/index.ts';

const run = promisify(execFile);
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg('seconds', 10);
const CONNECTIONS = arg('connections', 32);
const EXECS = arg('execs', 300);
const SECRET = randomBytes(32).toString('hex');
const LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'api' };

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const fmt = (xs: number[]) =>
  `median ${quantile(xs, 0.5).toFixed(2)} ms, p99 ${quantile(xs, 0.99).toFixed(2)} ms (n=${xs.length})`;

interface WrkResult {
  rps: number;
  p50: string;
  p99: string;
  non2xx: number;
}

async function wrk(url: string, headers: Record<string, string>): Promise<WrkResult> {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  const { stdout } = await run('wrk', [...args, url], { maxBuffer: 1 << 20 });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const p50 = /50%\s+(\S+)/.exec(stdout)?.[1] ?? '?';
  const p99 = /99%\s+(\S+)/.exec(stdout)?.[1] ?? '?';
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  return { rps, p50, p99, non2xx };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'api-bench-'));
  const store = await EncryptedStore.open({ dir, secret: SECRET });
  const sessions = await SessionAuth.create({
    secret: SECRET,
    store,
    siwe: { publicUrl: () => apiUrl, chainId: 31337 },
  });
  let apiUrl = 'http://127.0.0.1';
  const sandboxes = new MemorySandboxes();
  const docker = new Docker();
  const account = privateKeyToAccount(generatePrivateKey());
  const owner = account.address.toLowerCase();

  // A real sandbox container from the project image, reached on loopback like the manager does.
  const image = await ensureSandboxImage({ onProgress: (m) => console.error(`[image] ${m}`) });
  const record = makeRecord(owner);
  const container = await docker.createContainer({
    Image: image.tag,
    Env: [`SIDECAR_AUTH_TOKEN=${record.token}`],
    Labels: LABELS,
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  const servers: Array<{ close(): Promise<void> }> = [];
  try {
    await container.start();
    const info = await container.inspect();
    const hostPort = info.NetworkSettings.Ports['8080/tcp']?.[0]?.HostPort;
    const sidecarUrl = `http://127.0.0.1:${hostPort}`;
    for (let i = 0; i < 100; i++) {
      const ok = await fetch(`${sidecarUrl}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    sandboxes.add(record, sidecarUrl);
    for (let i = 0; i < 4; i++) sandboxes.add(makeRecord(owner), sidecarUrl);

    // Production-like: every request logs one line (to /dev/null here), metrics on.
    const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
    const api = createOperatorApi(
      {
        sessions,
        sandboxes,
        sidecars: createApiSidecars(sandboxes),
        store,
        metrics: new Registry(),
        logger,
        mode: 'cloud',
        capabilities: {},
      },
      { rateLimits: { read: 10_000_000, write: 10_000_000, auth: 1000, terminal: 1_000_000 } },
    );
    const server = await serveOperatorApi(api, { port: 0 });
    apiUrl = server.url;
    servers.push(server);
    const floorApp = new Hono();
    floorApp.get('/floor', (c) => c.json({ sandboxes: [] }));
    const floor = await serveOperatorApi(floorApp, { port: 0 });
    servers.push(floor);

    const ch = (await (
      await fetch(`${server.url}/api/auth/challenge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address: account.address }),
      })
    ).json()) as {
      nonce: string;
      message: string;
    };
    const signature = await account.signMessage({ message: ch.message });
    const sess = (await (
      await fetch(`${server.url}/api/auth/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ nonce: ch.nonce, address: account.address, signature }),
      })
    ).json()) as { token: string };
    const auth = { authorization: `Bearer ${sess.token}` };

    console.log(
      `# operator API bench (${SECONDS}s per wrk run, ${CONNECTIONS} connections, 1 wrk thread; ` +
        `${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(1)} at start)`,
    );
    await wrk(`${floor.url}/floor`, {}); // warm-up
    const floorRes = await wrk(`${floor.url}/floor`, {});
    const apiRes = await wrk(`${server.url}/api/sandboxes`, auth);
    console.log(
      `floor  GET /floor (bare Hono, same server):  ${floorRes.rps.toFixed(0)} req/s, p50 ${floorRes.p50}, p99 ${floorRes.p99}`,
    );
    console.log(
      `API    GET /api/sandboxes (PASETO, 5 sbx):  ${apiRes.rps.toFixed(0)} req/s, p50 ${apiRes.p50}, p99 ${apiRes.p99}, non-2xx ${apiRes.non2xx}`,
    );
    console.log(
      `ratio  API/floor throughput: ${(apiRes.rps / floorRes.rps).toFixed(2)}  (target ≥ 5000 req/s)`,
    );

    // Exec: alternate API and direct calls so both see the same container and machine state.
    const direct = new SidecarClient({ sandboxId: record.id, baseUrl: sidecarUrl, token: record.token });
    const body = JSON.stringify({ command: 'echo hello' });
    const viaApi: number[] = [];
    const viaSidecar: number[] = [];
    const viaApiOnce = async () => {
      const t0 = performance.now();
      const r = await fetch(`${server.url}/api/sandboxes/${record.id}/exec`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body,
      });
      const j = (await r.json()) as { stdout?: string };
      if (j.stdout !== 'hello\n') throw new Error(`API exec failed: ${JSON.stringify(j)}`);
      return performance.now() - t0;
    };
    const directOnce = async () => {
      const t0 = performance.now();
      await direct.exec({ command: 'echo hello' });
      return performance.now() - t0;
    };
    // Interleaved, order alternating, 20 warm-ups: both paths see the same machine state.
    for (let i = 0; i < EXECS + 20; i++) {
      let a: number;
      let d: number;
      if (i % 2 === 0) {
        a = await viaApiOnce();
        d = await directOnce();
      } else {
        d = await directOnce();
        a = await viaApiOnce();
      }
      if (i >= 20) {
        viaApi.push(a);
        viaSidecar.push(d);
      }
    }
    const mApi = quantile(viaApi, 0.5);
    const mSide = quantile(viaSidecar, 0.5);
    console.log(`exec   straight to the sidecar (SidecarClient): ${fmt(viaSidecar)}`);
    console.log(`exec   through the API:                         ${fmt(viaApi)}`);
    console.log(
      `exec   API overhead: median +${(mApi - mSide).toFixed(2)} ms, ratio ${(mApi / mSide).toFixed(2)} (target ≤ 2 ms)`,
    );
  } finally {
    for (const s of servers) await s.close();
    await container.remove({ force: true }).catch(() => {});
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
