// Benchmark: the port proxy. A real sandbox (project image, real SandboxManager, which resolves
// the mapping from the live container on every request) serves a small Node app on an exposed
// port; N sequential GETs through the operator API's proxy are timed against the floor measured
// in the same run: the same GETs straight to the container's loopback host port.
// Run: npx tsx bench/port-proxy.bench.ts [--requests 300]
import { request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { makeRig, sidecarExec } from '@agent-sandbox/runtime/testing';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createOperatorApi } from '../runtime/src/api/app.ts';
import { serveOperatorApi } from '../runtime/src/api/serve.ts';
import { PROXY_APP_JS } from '../runtime/src/api/testing/proxy-apps.ts';
import { SessionAuth } from '../runtime/src/auth/index.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg('requests', 300);

function get(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(url, { headers }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
const q = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const ms = (x: number) => `${x.toFixed(2)} ms`;

async function main(): Promise<void> {
  const image = await ensureSandboxImage({ onProgress: (m) => console.error(`[image] ${m}`) });
  const rig = await makeRig(image.tag);
  let apiUrl = 'http://127.0.0.1';
  const sessions = await SessionAuth.create({
    secret: rig.secret,
    store: rig.store,
    siwe: { publicUrl: () => apiUrl, chainId: 31337 },
  });
  const api = createOperatorApi(
    {
      sessions,
      sandboxes: rig.manager,
      store: rig.store,
      metrics: new Registry(),
      logger: pino({ level: 'silent' }),
      mode: 'cloud',
      capabilities: {},
    },
    { rateLimits: { write: 10_000_000 } },
  );
  const server = await serveOperatorApi(api, { port: 0 });
  apiUrl = server.url;
  try {
    const owner = privateKeyToAccount(generatePrivateKey());
    const rec = await rig.manager.create({
      owner: owner.address,
      serviceId: 1,
      callId: 'bench-proxy',
      exposedPorts: [3001],
    });
    const b64 = Buffer.from(PROXY_APP_JS).toString('base64');
    await sidecarExec(
      rig.manager.sidecarEndpoint(rec.id),
      `echo ${b64} | base64 -d > /tmp/app.cjs && (nohup node /tmp/app.cjs 3001 >/dev/null 2>&1 &)`,
    );
    const ch = sessions.createChallenge({ address: owner.address });
    const s = await sessions.createSession({
      nonce: ch.nonce,
      address: owner.address,
      signature: await owner.signMessage({ message: ch.message }),
    });
    const auth = { authorization: `Bearer ${s.token}` };
    const direct = `http://127.0.0.1:${(await rig.manager.exposedPort(rec.id, 3001)).port}/x`;
    const proxied = `${server.url}/api/sandboxes/${rec.id}/port/3001/x`;
    for (let i = 0; i < 200; i++) {
      if (
        await get(direct).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (let i = 0; i < 30; i++) {
      await get(direct);
      await get(proxied, auth);
    }
    const floor: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < N; i++) {
      floor.push(await get(direct));
      ours.push(await get(proxied, auth));
    }
    console.log(
      `# port proxy bench (${N} sequential GETs each, ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})`,
    );
    console.log(`  through the proxy   median ${ms(q(ours, 0.5))}  p99 ${ms(q(ours, 0.99))}`);
    console.log(`  floor (direct)      median ${ms(q(floor, 0.5))}  p99 ${ms(q(floor, 0.99))}`);
    console.log(`  ratio (median proxy / floor): ${(q(ours, 0.5) / q(floor, 0.5)).toFixed(2)}`);
  } finally {
    await server.close();
    await rig.cleanup();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
