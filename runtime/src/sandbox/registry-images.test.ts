// Images from a registry, against a real registry v2 (Debian's docker-registry on 127.0.0.1 with
// its own config and storage, testing/local-registry.ts): pulls by tag and by digest, refusals before anything
// is pulled (allow-list) or started (wrong digest, too large, what an image may not do), and a
// hostile image that must neither get root nor break the sidecar mounted into it.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { type LocalRegistry, runProgram as run, startLocalRegistry } from './testing/local-registry.ts';
import { currentSuiteRuntime, makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000e6';
let rig: TestRig;
let registry: LocalRegistry | undefined;
let host = '';
let call = 0;

/** Builds `name` from the plain Debian stage plus `body` and pushes it (out of the engine again). */
const pushImage = (name: string, body: string) => registry!.push(name, body);

let plain = '';
let hostile = '';
const refused: Record<string, string> = {};

beforeAll(async () => {
  registry = await startLocalRegistry({ base: image });
  host = registry.host;
  plain = await pushImage('library/plain:1', '');
  const pushes = [
    pushImage(
      'hostile/app:1',
      `RUN mkdir -p /usr/local/bin && cp /bin/bash /usr/local/bin/rootbash && chmod 4755 /usr/local/bin/rootbash \\
 && printf '#!/bin/sh\\necho "$(id -u)" > /tmp/entry-ran\\n' > /evil-entry && chmod 755 /evil-entry \\
 && printf 'require("fs").writeFileSync("/tmp/node-options-" + process.getuid(), "x")\\n' > /evil.js \\
 && mkdir -p /home/agent && cp /usr/local/bin/rootbash /home/agent/planted && chmod 4755 /home/agent/planted
ENV LD_PRELOAD=/nonexistent/evil.so NODE_OPTIONS="--require /evil.js" SIDECAR_AUTH_TOKEN=0000000000000000000000000000000000000000000000000000000000000000 AGENT_SUBPROCESS_UID=0 HOME=/etc
HEALTHCHECK --interval=1s CMD /evil-entry
STOPSIGNAL SIGKILL
WORKDIR /etc
USER 65534:65534
ENTRYPOINT ["/evil-entry"]`,
    ),
    pushImage('hostile/volume:1', 'VOLUME /etc'),
    pushImage('hostile/kit-link:1', 'RUN ln -s /home/agent /.agent-sandbox'),
    pushImage('hostile/home-link:1', 'RUN rm -rf /home/agent && ln -s /etc /home/agent'),
    pushImage('hostile/preload:1', 'RUN echo /tmp/evil.so > /etc/ld.so.preload'),
  ];
  const [h, volume, kitLink, homeLink, preload] = await Promise.all(pushes);
  hostile = h!;
  Object.assign(refused, { volume, kitLink, homeLink, preload });
  rig = await makeRig(image, { imageAllowlist: [`${host}/library/plain`, `${host}/hostile/*`] });
});

afterAll(async () => {
  await rig?.cleanup();
  await registry?.close();
});

const create = (img: string, extra: Record<string, unknown> = {}) =>
  rig.manager.create({ owner, serviceId: 7, callId: `reg-${++call}`, image: img, ...extra });
const exec = (id: string, cmd: string) => sidecarExec(rig.manager.sidecarEndpoint(id), cmd);
const engineHas = (ref: string) =>
  rig.manager.driver.docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );
/**
 * A /proc file of the sandbox's root sidecar (tini's child: pid 1 names sidecar.cjs too), read as
 * root inside its container (docker exec with the image's bash and cat): under runsc its processes
 * are gVisor's, not the host's. The pattern is split so this script's own command line misses it.
 */
const sidecarProc = (containerId: string, file: string) =>
  run('docker', [
    'exec',
    '-u',
    '0:0',
    containerId,
    '/bin/bash',
    '-c',
    `n=sidecar; n=$n.cjs; for p in /proc/[0-9]*; do [[ $p != /proc/1 && "$(cat $p/cmdline 2>/dev/null)" == *"$n"* ]] && exec cat $p/${file}; done; exit 1`,
  ]);
const progressOf = (callId: string) => rig.manager.getProvision(callId, 7).catch(() => undefined);

describe('images from a registry', () => {
  it('a plain Debian image pulled by tag runs a working sandbox (exec, files) with the mounted sidecar, named by digest from then on', async () => {
    expect(await engineHas(plain)).toBe(false);
    const s = await create(plain);
    expect(s.mountedSidecar).toBe(true);
    expect(s.image).toMatch(new RegExp(`^${host}/library/plain@sha256:[0-9a-f]{64}$`));
    const p = await progressOf(s.callId);
    expect(p?.phases.map((x) => x.phase)).toContain('image_pull');
    expect(p?.pull).toMatchObject({ image: `${host}/library/plain:1`, done: true });
    expect(p!.pull!.layers).toBeGreaterThan(0);

    const r = await exec(s.id, 'id -u; cat /etc/debian_version; command -v node || echo no-node; pwd');
    expect(r.stdout.split('\n').slice(0, 1)).toEqual(['1000']);
    expect(r.stdout).toContain('no-node');
    const ep = rig.manager.sidecarEndpoint(s.id);
    const post = (path: string, body: unknown) =>
      fetch(`${ep.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ep.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((x) => x.json() as Promise<{ success: boolean; data: { content: string } }>);
    expect((await post('/files/write', { path: 'notes/a.txt', content: 'hello' })).success).toBe(true);
    expect((await post('/files/read', { path: 'notes/a.txt' })).data.content).toBe('hello');
    // find -printf, not stat: gVisor refuses coreutils 9's statx (README, security).
    expect((await exec(s.id, "find /home/agent/notes/a.txt -printf '%U:%G'")).stdout).toBe('1000:1000');

    // Stop and resume: the stopped container starts again with the kit; a warm round trip too.
    await rig.manager.stop(s.id);
    await rig.manager.resume(s.id);
    expect((await exec(s.id, 'cat /home/agent/notes/a.txt')).stdout).toBe('hello');
    await rig.manager.delete(s.id);
  });

  it('pulls by digest, and refuses a digest the registry does not have at image_pull (nothing started)', async () => {
    const first = await create(plain);
    const pinned = first.image;
    await rig.manager.delete(first.id);
    await run('docker', ['rmi', '-f', pinned]).catch(() => {});
    const s = await create(pinned);
    expect(s.image).toBe(pinned);
    expect((await exec(s.id, 'echo ok')).stdout).toBe('ok\n');
    await rig.manager.delete(s.id);

    const wrong = `${host}/library/plain@sha256:${'0'.repeat(64)}`;
    const callId = `reg-${++call}`;
    await expect(rig.manager.create({ owner, serviceId: 7, callId, image: wrong })).rejects.toMatchObject({
      code: 'IMAGE_NOT_FOUND',
      message: expect.stringContaining('no such tag or digest'),
    });
    const p = await progressOf(callId);
    expect(p).toMatchObject({ phase: 'failed', failedPhase: 'image_pull' });
    expect(await engineHas(wrong)).toBe(false);
  });

  it('a registry or repository off the allow-list is refused at create: nothing admitted, nothing pulled', async () => {
    const other = `${host}/elsewhere/tool:1`;
    await registry!.pushTagged(image, 'elsewhere/tool:1');
    for (const img of [
      other,
      `127.0.0.2:${host.split(':')[1]}/library/plain:1`,
      'registry.example.com/x:1',
    ]) {
      const callId = `reg-${++call}`;
      await expect(rig.manager.create({ owner, serviceId: 7, callId, image: img })).rejects.toMatchObject({
        code: 'IMAGE_NOT_ALLOWED',
        message: expect.stringContaining('SANDBOX_IMAGE_ALLOWLIST'),
      });
      expect(await progressOf(callId)).toBeUndefined();
      expect(await engineHas(img)).toBe(false);
    }
  });

  it('an image above SANDBOX_IMAGE_MAX_MB is refused and not kept', async () => {
    // The plain image is a few MB: a limit of 1 MB makes its layer the huge one.
    const small = await makeRig(image, { imageAllowlist: [`${host}/library/plain`], imageMaxMb: 1 });
    try {
      await expect(
        small.manager.create({ owner, serviceId: 7, callId: 'too-big', image: plain }),
      ).rejects.toMatchObject({
        code: 'IMAGE_TOO_LARGE',
        message: expect.stringContaining('SANDBOX_IMAGE_MAX_MB'),
      });
      expect(await engineHas(plain)).toBe(false);
    } finally {
      await small.cleanup();
    }
  });

  it('attack: a hostile image (set-uid shell, its own ENTRYPOINT/USER/ENV/HEALTHCHECK/WORKDIR, a planted workspace) gets no root and the sidecar works', async () => {
    const s = await create(hostile);
    const id = s.id;
    // Commands run as the agent; the set-uid shell gives nothing (no-new-privileges).
    expect((await exec(id, 'id -u; /usr/local/bin/rootbash -p -c "id -u"')).stdout).toBe('1000\n1000\n');
    // Its workspace was not copied in (the planted set-uid file stays out).
    expect(
      (await exec(id, 'ls -A /home/agent; test -e /home/agent/planted || echo absent')).stdout,
    ).toContain('absent');
    // Its ENTRYPOINT never ran, its NODE_OPTIONS never reached a root Node, its ENV reaches the
    // agent's processes only (and not the keys that configure the sidecar).
    const seen = await exec(id, 'echo /tmp/*; echo "pre=$LD_PRELOAD opts=$NODE_OPTIONS home=$HOME"');
    expect(seen.stdout).not.toContain('entry-ran');
    expect(seen.stdout).not.toContain('node-options-0');
    expect(seen.stdout).toContain('pre=/nonexistent/evil.so opts=--require /evil.js home=/home/agent');

    const info = await rig.manager.driver.docker.getContainer(s.containerId!).inspect();
    expect(info.HostConfig.Runtime).toBe(currentSuiteRuntime());
    expect(info.Config.User).toBe('0:0');
    expect(info.Config.Healthcheck?.Test).toEqual(['NONE']);
    expect(info.Config.Entrypoint).toEqual(['/.agent-sandbox/kit/bin/tini', '--']);
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges:true');
    // The root sidecar: every file it maps is the kit's (none of the image's libc, loader, NSS or
    // OpenSSL), and its env holds none of the image's values.
    const status = await sidecarProc(s.containerId!, 'status');
    expect(status).toMatch(/^Uid:\s+0\s/m);
    const maps = (await sidecarProc(s.containerId!, 'maps'))
      .split('\n')
      .map((l) => l.trim().split(/\s+/).slice(5).join(' '))
      .filter((f) => f.startsWith('/'));
    expect(maps.length).toBeGreaterThan(5);
    expect(maps.filter((f) => !f.startsWith('/.agent-sandbox/kit/'))).toEqual([]);
    const environ = (await sidecarProc(s.containerId!, 'environ')).split('\0');
    expect(environ).toContain('LD_PRELOAD=');
    expect(environ).toContain('NODE_OPTIONS=');
    // The image's ENV rides only as data for the agent's processes (SIDECAR_IMAGE_ENV, a JSON
    // object Node does not read, as user env rides in PUT /env); no variable of it is in effect here.
    expect(environ.filter((e) => e.includes('evil') && !e.startsWith('SIDECAR_IMAGE_ENV='))).toEqual([]);
    const carried = JSON.parse(
      environ.find((e) => e.startsWith('SIDECAR_IMAGE_ENV='))!.slice('SIDECAR_IMAGE_ENV='.length),
    ) as Record<string, string>;
    expect(carried.LD_PRELOAD).toBe('/nonexistent/evil.so');
    // The image's token did not replace the sandbox's: the operator's token works (exec above)
    // and the image's does not.
    const ep = rig.manager.sidecarEndpoint(id);
    const res = await fetch(`${ep.url}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${'0'.repeat(64)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'id' }),
    });
    expect(res.status).toBe(403); // a wrong token: 403 (a missing one is 401)
    // The agent cannot change the kit.
    expect((await exec(id, 'touch /.agent-sandbox/kit/bin/node 2>&1 || echo refused')).stdout).toContain(
      'refused',
    );
    await rig.manager.delete(id);
  });

  it.each([
    ['volume', 'VOLUME /etc'],
    ['kitLink', '/.agent-sandbox is a symlink'],
    ['homeLink', '/home/agent is a symlink'],
    ['preload', '/etc/ld.so.preload'],
  ])(
    'attack: an image with %s is refused at image_pull, before any sandbox container exists',
    async (k, text) => {
      const callId = `reg-${++call}`;
      await expect(
        rig.manager.create({ owner, serviceId: 7, callId, image: refused[k]! }),
      ).rejects.toMatchObject({ code: 'IMAGE_REFUSED', message: expect.stringContaining(text) });
      expect(await progressOf(callId)).toMatchObject({ phase: 'failed', failedPhase: 'image_pull' });
      const left = await rig.manager.driver.docker.listContainers({
        all: true,
        filters: { label: [`agent-sandbox.operator=${rig.operatorId}`] },
      });
      expect(left).toEqual([]);
    },
  );
});
