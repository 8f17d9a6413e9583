// Security (hostile user env) on the real engine: a sandbox owner tries to get code or settings of
// theirs into the root processes of their sandbox (tini, the sidecar) through create env, secrets
// or exec env, or to change the sidecar's code. Each is refused or has no effect, across stop,
// resume and secret injection; the sidecar's code and PID 1 stay root-owned and unchanged.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
let rig: TestRig;
let call = 0;
const base = { owner: '0xAbC0000000000000000000000000000000000002', serviceId: 11 };
const create = (env: Record<string, string>) =>
  rig.manager.create({ ...base, callId: `hostile-${++call}`, env });

/** Runs `cmd` in the container as root through the engine (what the attacker cannot do). */
async function rootExec(containerId: string, cmd: string): Promise<{ code: number; out: string }> {
  const ex = await rig.manager.driver.docker
    .getContainer(containerId)
    .exec({ Cmd: ['sh', '-c', cmd], User: '0', AttachStdout: true, AttachStderr: true });
  const stream = await ex.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  // Demultiplex the engine's 8-byte framed stream.
  const raw = Buffer.concat(chunks);
  let out = '';
  for (let i = 0; i + 8 <= raw.length; ) {
    const n = raw.readUInt32BE(i + 4);
    out += raw.subarray(i + 8, i + 8 + n).toString();
    i += 8 + n;
  }
  const info = await ex.inspect();
  return { code: info.ExitCode ?? -1, out };
}

/** What the root processes see: PID 1's and the sidecar's environment, and the container config. */
async function rootView(containerId: string): Promise<string> {
  const info = await rig.manager.driver.docker.getContainer(containerId).inspect();
  const procs = await rootExec(
    containerId,
    'cat /proc/1/environ; echo; for p in $(pgrep -f sidecar.cjs); do cat /proc/$p/environ; echo; done',
  );
  return `${info.Config.Env.join('\n')}\n${procs.out.replaceAll('\0', '\n')}`;
}

const CODE_FINGERPRINT =
  // find, not stat: coreutils' statx flags are refused by the gVisor Debian ships (README, runtimes).
  'find /opt/sidecar /opt/sidecar/sidecar.cjs /opt/sidecar/sidecar-app.cjs /usr/bin/tini -maxdepth 0 -printf "%U:%G %m\\n"; sha256sum /opt/sidecar/sidecar.cjs /opt/sidecar/sidecar-app.cjs /usr/bin/tini';

beforeAll(async () => {
  rig = await makeRig(image);
});
afterAll(async () => {
  await rig?.cleanup();
});

describe('hostile user env', () => {
  it('create env naming a loader, Node, bash or platform variable is refused with the key named; nothing is created', async () => {
    for (const [k, v] of [
      ['LD_PRELOAD', '/home/agent/evil.so'],
      ['NODE_OPTIONS', '--require /home/agent/evil.js'],
      ['BASH_ENV', '/home/agent/evil.sh'],
      ['AGENT_WORKSPACE_ROOT', '/opt/sidecar'],
      ['SIDECAR_AGENT_COMMAND', 'id'],
    ] as const) {
      await expect(create({ GREETING: 'hi', [k]: v })).rejects.toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining(`"${k}"`),
      });
    }
    const mine = await rig.manager.driver.listManaged(rig.operatorId);
    expect(mine).toEqual([]);
  });

  it("user env and secrets reach the agent's commands but never tini, the sidecar or the container config, across secrets, stop and resume", async () => {
    const rec = await create({ GREETING: 'hello-base', SANDBOX_AGENT_COMMAND: 'echo agent' });
    const ep = () => rig.manager.sidecarEndpoint(rec.id);
    const before = await rootExec(rec.containerId!, CODE_FINGERPRINT);
    expect(before.code).toBe(0);
    expect(before.out).toMatch(/^0:0 755\n0:0 /);

    expect((await sidecarExec(ep(), 'echo $GREETING')).stdout).toBe('hello-base\n');
    let view = await rootView(rec.containerId!);
    expect(view).not.toContain('hello-base');
    expect(view).not.toContain('GREETING');

    // Secrets: refused for platform names, otherwise delivered to children only.
    for (const k of ['LD_PRELOAD', 'NODE_OPTIONS', 'AGENT_WORKSPACE_ROOT']) {
      await expect(rig.manager.injectSecrets(rec.id, { [k]: '/home/agent/x' })).rejects.toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining(`"${k}"`),
      });
    }
    const withSecret = await rig.manager.injectSecrets(rec.id, { API_KEY: 'sk-hostile-secret-value' });
    expect((await sidecarExec(ep(), 'echo $API_KEY $GREETING')).stdout).toBe(
      'sk-hostile-secret-value hello-base\n',
    );
    view = await rootView(withSecret.containerId!);
    expect(view).not.toContain('sk-hostile-secret-value');
    expect(view).not.toContain('hello-base');

    // Stop (hot) and resume the same container: the env is delivered again, still children only.
    await rig.manager.stop(rec.id);
    const back = await rig.manager.resume(rec.id);
    expect((await sidecarExec(ep(), 'echo $API_KEY')).stdout).toBe('sk-hostile-secret-value\n');
    view = await rootView(back.containerId!);
    expect(view).not.toContain('sk-hostile-secret-value');

    // The sidecar refuses a platform name in exec env itself too (a second line behind the API).
    const res = await fetch(`${ep().url}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ep().token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true', env: { LD_PRELOAD: '/home/agent/evil.so' } }),
    });
    expect(res.status).toBe(400);
    const refused = (await res.json()) as { error: { code: string; message: string } };
    expect(refused.error).toMatchObject({
      code: 'INVALID_ENV',
      message: expect.stringContaining('"LD_PRELOAD"'),
    });

    const after = await rootExec(back.containerId!, CODE_FINGERPRINT);
    expect(after.out).toBe(before.out);
  });

  it("nobody in the container can replace the sidecar's code: read-only root, files API confined, root included", async () => {
    const rec = await create({});
    const ep = rig.manager.sidecarEndpoint(rec.id);
    const before = await rootExec(rec.containerId!, CODE_FINGERPRINT);
    // As the agent user.
    const agent = await sidecarExec(
      ep,
      'echo x > /opt/sidecar/sidecar.cjs; echo $?; echo x > /opt/sidecar/sidecar-app.cjs; echo $?; ln -sf /opt/sidecar/sidecar.cjs /home/agent/link; touch /home/agent/ok && echo ws-ok; touch /tmp/ok && echo tmp-ok',
    );
    expect(agent.stdout).toBe('1\n1\nws-ok\ntmp-ok\n');
    // Through the files API (the root sidecar writes), via a symlink in the workspace.
    const write = await fetch(`${ep.url}/files/write`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ep.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'link', content: 'process.exit(0)' }),
    });
    expect(write.status).toBeGreaterThanOrEqual(400);
    // Even root inside the container cannot: the root filesystem is read-only.
    const asRoot = await rootExec(
      rec.containerId!,
      'echo x > /opt/sidecar/sidecar.cjs 2>&1; echo x > /opt/sidecar/sidecar-app.cjs 2>&1; touch /usr/bin/x 2>&1',
    );
    expect(asRoot.code).not.toBe(0);
    expect(asRoot.out).toMatch(/Read-only file system/);
    await rig.manager.stop(rec.id);
    const back = await rig.manager.resume(rec.id);
    expect((await rootExec(back.containerId!, CODE_FINGERPRINT)).out).toBe(before.out);
  });
});
