// Test-only: a Docker engine of the test's own, so a test may kill and restart dockerd without
// touching the shared one: its own socket, data root, exec root (with its own managed containerd)
// and pid file, no default bridge and no iptables rules (sandboxes on it run with egress `none`:
// a `public` network's fixed bridge name would collide with the shared engine's on this host).
// The sandbox image is copied in from the shared engine (docker save | docker load).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import Docker from 'dockerode';

export interface PrivateEngine {
  socketPath: string;
  docker: Docker;
  /** Where dockerd logs (appended across restarts). */
  logFile: string;
  /** kill -9 of dockerd (its containers' shims live on, as after a crash); resolves once it exited. */
  kill(): Promise<void>;
  /** Starts dockerd again on the same roots; resolves once it answers a ping. */
  start(): Promise<void>;
  /** Stops it and removes its roots. */
  destroy(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startPrivateEngine(opts: { copyImages: string[] }): Promise<PrivateEngine> {
  const tag = randomBytes(4).toString('hex');
  const execRoot = `/run/asbx-de-${tag}`;
  const dataRoot = `/var/lib/asbx-de-${tag}`;
  const socketPath = `${execRoot}/docker.sock`;
  const logFile = `${execRoot}.log`;
  await mkdir(execRoot, { recursive: true });
  await mkdir(dataRoot, { recursive: true });
  const docker = new Docker({ socketPath });
  let child: ChildProcess | undefined;

  const start = async () => {
    const { openSync } = await import('node:fs');
    const out = openSync(logFile, 'a');
    child = spawn(
      'dockerd',
      [
        `--host=unix://${socketPath}`,
        `--data-root=${dataRoot}`,
        `--exec-root=${execRoot}`,
        `--pidfile=${execRoot}/dockerd.pid`,
        '--bridge=none',
        '--iptables=false',
        '--ip6tables=false',
        '--ip-masq=false',
        '--log-level=warn',
      ],
      { stdio: ['ignore', out, out] },
    );
    const exited = new Promise<number | null>((r) => child?.once('exit', r));
    for (let i = 0; i < 240; i++) {
      if (
        await docker.ping().then(
          () => true,
          () => false,
        )
      )
        return;
      const gone = await Promise.race([exited.then(() => true), sleep(250).then(() => false)]);
      if (gone) break;
    }
    const log = await readFile(logFile, 'utf8').catch(() => '');
    throw new Error(
      `private dockerd did not come up; its log ends:\n${log.split('\n').slice(-15).join('\n')}`,
    );
  };

  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };

  await start();
  const shared = new Docker();
  for (const ref of opts.copyImages) {
    const stream = await shared.getImage(ref).get();
    const res = await docker.loadImage(stream, { quiet: true });
    await new Promise<void>((ok, fail) =>
      docker.modem.followProgress(res, (err: Error | null) => (err ? fail(err) : ok())),
    );
  }

  return {
    socketPath,
    docker,
    logFile,
    kill,
    start,
    async destroy() {
      // A clean stop lets dockerd stop its containers and unmount their layers before the roots go.
      const c = child;
      if (c && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        await Promise.race([exited, sleep(60_000)]);
        await kill();
      }
      // dockerd bind-mounts its data root onto itself (and may leave layer mounts under it).
      for (const root of [dataRoot, execRoot]) {
        await new Promise((r) => execFile('umount', ['-R', '-l', root], () => r(undefined)));
      }
      await rm(dataRoot, { recursive: true, force: true }).catch(() => {});
      await rm(execRoot, { recursive: true, force: true }).catch(() => {});
      await rm(logFile, { force: true });
    },
  };
}
