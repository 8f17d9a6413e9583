// Benchmark: sandbox container start → sidecar healthy, and exec round-trip through the sidecar vs docker exec.
// Run: npx tsx bench/sidecar.bench.ts [--starts 20] [--execs 200]
// Floors measured in the same run: a bare node:http server in the same image (startup), and the Docker
// engine's own exec API plus the `docker exec` CLI running the same command (exec).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';
import { probeHealth, waitHealthy } from '@agent-sandbox/sidecar/testing';
import Docker from 'dockerode';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const STARTS = arg('starts', 20);
const EXECS = arg('execs', 200);
const COMMAND = 'echo hello';
const docker = new Docker();
const LABELS = { 'agent-sandbox.test': '1', 'agent-sandbox.bench': 'sidecar' };

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const fmt = (xs: number[]) =>
  `median ${quantile(xs, 0.5).toFixed(2)} ms, p99 ${quantile(xs, 0.99).toFixed(2)} ms (n=${xs.length})`;
const now = () => performance.now();

async function startContainer(image: string, token: string, cmd?: string[]) {
  const t0 = now();
  const c = await docker.createContainer({
    Image: image,
    Env: [`SIDECAR_AUTH_TOKEN=${token}`],
    Labels: LABELS,
    ...(cmd ? { Cmd: cmd } : {}),
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  await c.start();
  const tStarted = now();
  const port = (await c.inspect()).NetworkSettings.Ports['8080/tcp']?.[0]?.HostPort;
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (await probeHealth(url)) break;
    if (now() - t0 > 30_000) throw new Error('not healthy in 30 s');
    await new Promise((r) => setTimeout(r, 2));
  }
  const tHealthy = now();
  return { c, url, total: tHealthy - t0, afterStart: tHealthy - tStarted };
}

async function dockerApiExec(c: Docker.Container): Promise<string> {
  const ex = await c.exec({
    Cmd: ['bash', '-lc', COMMAND],
    AttachStdout: true,
    AttachStderr: true,
    User: '1000:1000',
  });
  const stream = await ex.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  stream.on('data', (d: Buffer) => chunks.push(d));
  await new Promise((r) => stream.on('end', r));
  return Buffer.concat(chunks).toString();
}

async function main() {
  const { tag } = await ensureSandboxImage({ onProgress: (l) => process.stderr.write(`[image] ${l}\n`) });
  const token = randomBytes(32).toString('hex');
  const made: Docker.Container[] = [];
  try {
    // 1) start → healthy, the sidecar vs a bare node:http server in the same image (floor).
    const BARE = ['node', '-e', "require('http').createServer((q,s)=>s.end('ok')).listen(8080)"];
    const side: number[] = [];
    const sideAfter: number[] = [];
    const bare: number[] = [];
    process.stderr.write(
      `startup: ${STARTS} sidecar containers and ${STARTS} bare-node containers, interleaved\n`,
    );
    for (let i = 0; i < STARTS; i++) {
      const s = await startContainer(tag, token);
      side.push(s.total);
      sideAfter.push(s.afterStart);
      await s.c.remove({ force: true });
      const b = await startContainer(tag, token, BARE);
      bare.push(b.total);
      await b.c.remove({ force: true });
    }

    // 2) exec round trip on one warm container.
    const s = await startContainer(tag, token);
    made.push(s.c);
    await waitHealthy(s.url, 10_000);
    await new Promise((r) => setTimeout(r, 2_000));
    const rss = await fetch(`${s.url}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        command: `grep VmRSS /proc/$(pgrep -f '^node /opt/[s]idecar' | head -1)/status | awk '{print $2}'`,
      }),
    }).then((r) => r.json() as Promise<{ stdout: string }>);
    const viaSidecar = async () => {
      const r = await fetch(`${s.url}/terminals/commands`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: COMMAND }),
      });
      const j = (await r.json()) as { stdout: string };
      if (j.stdout !== 'hello\n') throw new Error(`unexpected sidecar output ${JSON.stringify(j)}`);
    };
    const viaApi = async () => {
      const out = await dockerApiExec(s.c);
      if (!out.includes('hello')) throw new Error(`unexpected docker exec output ${out}`);
    };
    const id = s.c.id;
    const viaCli = async () => {
      const { stdout } = await promisify(execFile)('docker', [
        'exec',
        '-u',
        '1000:1000',
        id,
        'bash',
        '-lc',
        COMMAND,
      ]);
      if (stdout !== 'hello\n') throw new Error('unexpected docker CLI output');
    };
    const measure = async (fn: () => Promise<void>, n: number) => {
      for (let i = 0; i < 10; i++) await fn();
      const xs: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = now();
        await fn();
        xs.push(now() - t);
      }
      return xs;
    };
    process.stderr.write(`exec: ${EXECS} round trips each of \`${COMMAND}\` (as uid 1000, bash -lc)\n`);
    const sc = await measure(viaSidecar, EXECS);
    const api = await measure(viaApi, EXECS);
    const cli = await measure(viaCli, Math.min(EXECS, 100));

    const ratio = (a: number[], b: number[]) => (quantile(a, 0.5) / quantile(b, 0.5)).toFixed(2);
    console.log(`image ${tag}`);
    console.log(`start → healthy, sidecar:               ${fmt(side)}`);
    console.log(`  of which after start() returned:      ${fmt(sideAfter)}`);
    console.log(`start → healthy, bare node http (floor): ${fmt(bare)}`);
    console.log(`  ratio sidecar / floor (median):        ${ratio(side, bare)}`);
    console.log(`exec via sidecar HTTP:                  ${fmt(sc)}`);
    console.log(`exec via Docker exec API (floor):       ${fmt(api)}`);
    console.log(`exec via docker exec CLI:               ${fmt(cli)}`);
    console.log(`  ratio sidecar / Docker exec API:       ${ratio(sc, api)}`);
    console.log(`  ratio sidecar / docker exec CLI:       ${ratio(sc, cli)}`);
    console.log(
      `sidecar idle RSS after 2 s:             ${(Number(rss.stdout.trim()) / 1024).toFixed(1)} MiB`,
    );
  } finally {
    for (const c of made) await c.remove({ force: true }).catch(() => {});
  }
}

await main();
