// Registry logins are the operator's own: against a real registry v2 behind htpasswd (Debian's
// docker-registry on 127.0.0.1, testing/local-registry.ts), a pull works with the operator's login
// (config registryLogins, what SANDBOX_REGISTRY_AUTH_FILE holds) and with nothing else. Attacks
// first: no login, a wrong password and a login for another host are refused at image_pull with an
// error that names the operator's setting; credentials a create puts in its image reference are
// refused before anything is pulled.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { SandboxRuntimeConfigInput } from './config.ts';
import { type LocalRegistry, startLocalRegistry } from './testing/local-registry.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000e7';
let registry: LocalRegistry;
let plain = '';
let call = 0;
const rigs: TestRig[] = [];

beforeAll(async () => {
  registry = await startLocalRegistry({ base: image, auth: true });
  plain = await registry.push('library/plain:1');
});
afterAll(async () => {
  for (const r of rigs) await r.cleanup();
  await registry?.close();
});

const rigWith = async (registryLogins: SandboxRuntimeConfigInput['registryLogins']) => {
  const r = await makeRig(image, {
    imageAllowlist: [`${registry.host}/library/plain`],
    ...(registryLogins ? { registryLogins } : {}),
  });
  rigs.push(r);
  return r;
};
const engineHas = (r: TestRig, ref: string) =>
  r.manager.driver.docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );

describe("registry logins are the operator's", () => {
  it.each([
    ['no login', () => ({})],
    ['a wrong password', () => ({ [registry.host]: { username: 'operator', password: 'not-the-password' } })],
    ['a login for another host', () => ({ 'localhost:1': registry.login! })],
  ])(
    'attack: %s is refused at image_pull, naming the operator’s registry login; nothing is pulled',
    async (_, logins) => {
      const r = await rigWith(logins());
      const callId = `auth-${++call}`;
      await expect(r.manager.create({ owner, serviceId: 7, callId, image: plain })).rejects.toMatchObject({
        code: 'IMAGE_PULL_FAILED',
        message: expect.stringContaining(
          "the operator's registry login (SANDBOX_REGISTRY_AUTH_FILE) is missing or wrong",
        ),
      });
      expect(await r.manager.getProvision(callId, 7)).toMatchObject({
        phase: 'failed',
        failedPhase: 'image_pull',
      });
      expect(await engineHas(r, plain)).toBe(false);
    },
  );

  it('attack: credentials in the image reference of a create are refused before any pull', async () => {
    const r = await rigWith({});
    for (const img of [
      plain.replace(registry.host, `operator:${registry.login!.password}@${registry.host}`),
      `http://operator:${registry.login!.password}@${registry.host}/library/plain:1`,
    ]) {
      const callId = `auth-${++call}`;
      const e = await r.manager.create({ owner, serviceId: 7, callId, image: img }).catch((x) => x);
      expect(e).toMatchObject({ code: 'VALIDATION', details: { field: 'image' } });
      // The refusal does not echo what the user sent (a password would end up in logs).
      expect(JSON.stringify([e.message, e.details])).not.toContain(registry.login!.password);
      expect(await r.manager.getProvision(callId, 7).catch(() => undefined)).toBeUndefined();
    }
    expect(await engineHas(r, plain)).toBe(false);
  });

  it("with the operator's login the image is pulled and runs", async () => {
    const r = await rigWith({ [registry.host]: registry.login! });
    const s = await r.manager.create({ owner, serviceId: 7, callId: `auth-${++call}`, image: plain });
    expect(s.image).toMatch(new RegExp(`^${registry.host}/library/plain@sha256:[0-9a-f]{64}$`));
    expect((await sidecarExec(r.manager.sidecarEndpoint(s.id), 'id -u')).stdout).toBe('1000\n');
    await r.manager.delete(s.id);
  });
});
