// Test-only (never product code): Debian's docker-registry, a real registry v2, on 127.0.0.1 with
// its own config and storage, optionally behind htpasswd basic auth (bcrypt, made by libcrypt
// through perl), and the small "plain Debian" images the registry tests push to it. Pushes use a
// docker client config of the registry's own (never the machine's ~/.docker), so a login made
// here is seen by nothing else.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';

/** Runs a program; rejects with its stderr when it exits non-zero. */
export function runProgram(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout!.on('data', (c) => (out += c));
    p.stderr!.on('data', (c) => (err += c));
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')}: ${err}`)),
    );
    if (input !== undefined) p.stdin!.end(input);
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * "Plain Debian", small enough to push on a loaded machine: bookworm's bash, coreutils and libc
 * (copied from `base`, our image, with their libraries, merged /usr like Debian 12), its /etc — no
 * sidecar, no Node, no tini, no agent user, an entrypoint of its own.
 */
export const plainStage = (base: string) => `FROM ${base} AS src
USER root
RUN set -e; o=/out; mkdir -p $o/usr/bin $o/usr/lib/x86_64-linux-gnu $o/lib64 $o/etc $o/home $o/tmp; \
 for b in bash sh id cat ls stat find touch test env sleep mkdir rm cp ln chmod echo printf; do cp -L "/usr/bin/$b" $o/usr/bin/; done; \
 for f in $(ldd $o/usr/bin/* 2>/dev/null | sed -n 's/.*=> \\(\\/[^ ]*\\).*/\\1/p' | sort -u); do cp -L "$f" $o/usr/lib/x86_64-linux-gnu/; done; \
 cp -L /lib64/ld-linux-x86-64.so.2 $o/lib64/; cp /etc/debian_version /etc/nsswitch.conf $o/etc/; \
 grep -v '^agent:' /etc/passwd > $o/etc/passwd; grep -v '^agent:' /etc/group > $o/etc/group; \
 ln -s usr/bin $o/bin; ln -s usr/lib $o/lib
FROM scratch
COPY --from=src /out/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["/bin/bash", "-c"]
CMD ["sleep infinity"]`;

export interface LocalRegistry {
  /** host:port, e.g. 127.0.0.1:41234. */
  readonly host: string;
  /** The htpasswd login (when started with auth): the only one the registry accepts. */
  readonly login: { username: string; password: string } | undefined;
  /** A docker config.json text holding `login` for `host` (what SANDBOX_REGISTRY_AUTH_FILE reads). */
  dockerAuthJson(): string;
  /** Builds `name` from the plain stage plus `body`, pushes it, removes it from the engine again. */
  push(name: string, body?: string): Promise<string>;
  /** Pushes an image the engine already has under another name (then untags that name again). */
  pushTagged(source: string, name: string): Promise<string>;
  close(): Promise<void>;
}

/** A bcrypt hash (libcrypt's $2b$) of `password`, as htpasswd -B makes it. */
async function bcrypt(password: string): Promise<string> {
  const abc = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  // 21 random characters and '.' (value 0): a salt whose padding bits are canonical.
  const salt = `${[...randomBytes(21)].map((b) => abc[b % 64]).join('')}.`;
  const hash = await runProgram('perl', [
    '-e',
    'print crypt($ARGV[0], $ARGV[1])',
    password,
    `$2b$05$${salt}`,
  ]);
  if (!hash.startsWith('$2b$05$')) throw new Error(`perl's crypt made no bcrypt hash: ${hash}`);
  return hash;
}

export async function startLocalRegistry(o: { base: string; auth?: boolean }): Promise<LocalRegistry> {
  const dir = join(
    process.env.TMPDIR ?? '/tmp',
    `asbx-registry-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  const clientConfig = join(dir, 'docker-client');
  await mkdir(join(dir, 'data'), { recursive: true });
  await mkdir(clientConfig, { recursive: true });
  const host = `127.0.0.1:${await freePort()}`;
  const login = o.auth ? { username: 'operator', password: randomBytes(18).toString('hex') } : undefined;
  let auth = '';
  if (login) {
    await writeFile(join(dir, 'htpasswd'), `${login.username}:${await bcrypt(login.password)}\n`);
    auth = `auth:\n  htpasswd:\n    realm: asbx-test\n    path: ${join(dir, 'htpasswd')}\n`;
  }
  await writeFile(
    join(dir, 'config.yml'),
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\n  delete:\n    enabled: true\nhttp:\n  addr: ${host}\n${auth}`,
  );
  const child: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'config.yml')], {
    stdio: 'ignore',
  });
  // Ready when /v2/ answers at all (200, or 401 behind auth): a readiness probe, not a delay.
  for (;;) {
    if (child.exitCode !== null)
      throw new Error('docker-registry exited; is it installed (scripts/ensure-toolchain.sh)?');
    const up = await fetch(`http://${host}/v2/`).then(
      (r) => r.status === 200 || r.status === 401,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const docker = (...args: string[]) => runProgram('docker', ['--config', clientConfig, ...args]);
  const pushed: string[] = [];
  if (login) {
    await runProgram(
      'docker',
      ['--config', clientConfig, 'login', '-u', login.username, '--password-stdin', host],
      login.password,
    );
  }
  const pushAndForget = async (ref: string) => {
    pushed.push(ref);
    await docker('push', '-q', ref);
    // Out of the engine again: a sandbox must pull it.
    await docker('rmi', ref);
    return ref;
  };
  return {
    host,
    login,
    dockerAuthJson: () =>
      JSON.stringify({
        auths: login
          ? { [host]: { auth: Buffer.from(`${login.username}:${login.password}`).toString('base64') } }
          : {},
      }),
    async push(name, body = '') {
      const ref = `${host}/${name}`;
      // `docker build -` reads the Dockerfile from stdin.
      await runProgram(
        'docker',
        ['--config', clientConfig, 'build', '-q', '-t', ref, '-'],
        `${plainStage(o.base)}\n${body}\n`,
      );
      return pushAndForget(ref);
    },
    async pushTagged(source, name) {
      const ref = `${host}/${name}`;
      await docker('tag', source, ref);
      return pushAndForget(ref);
    },
    async close() {
      child.kill('SIGTERM');
      for (const ref of pushed) await docker('rmi', '-f', ref).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A slow link to `target` (host:port) on a port of its own: bytes from the target reach the
 * client at about `bytesPerSecond` per connection (requests go through as they come). A pull
 * through it lasts as long as its size says on any machine, so the progress readings in between
 * can be seen. The registry behind it is the real one; only the wire is slower.
 */
export async function slowLink(
  target: string,
  bytesPerSecond: number,
): Promise<{ host: string; close(): Promise<void> }> {
  const [targetHost, targetPort] = [
    target.slice(0, target.lastIndexOf(':')),
    Number(target.split(':').pop()),
  ];
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    // The client gone or either side broken: both go. The target done: the client gets the rest.
    client.on('error', end).on('close', end);
    upstream.on('error', end);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      upstream.pause();
      client.write(chunk);
      setTimeout(() => upstream.resume(), (chunk.length / bytesPerSecond) * 1000);
    });
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
