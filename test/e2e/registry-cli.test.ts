// Images from a registry through the real programs: Debian's docker-registry on 127.0.0.1 behind
// htpasswd (it answers 401 to anyone without the login), an `agent-sandbox-operator run` process
// whose own config holds that login (SANDBOX_REGISTRY_AUTH_FILE, a docker config.json) and whose
// allow-list names the repository, on a fresh cloud service of the shared devnet, driven by the
// bundled `agent-sandbox` CLI. The create pulls through the operator's login (over a slow link, so
// the pull takes seconds) and the CLI shows the image_pull phase with the pull's progress readings; the password is in no log; a create that tries to
// bring credentials of its own is refused before anything is pulled.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type LocalRegistry, slowLink, startLocalRegistry } from '@agent-sandbox/runtime/testing';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BUNDLED_CLI, type CloudOperator, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-reg-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-registry-cli';
const docker = new Docker();
let op: CloudOperator | undefined;
let registry: LocalRegistry | undefined;
let link: Awaited<ReturnType<typeof slowLink>> | undefined;
/** The image as the operator is told to pull it: through the slow link to the registry. */
let plain = '';

const engineHas = (ref: string) =>
  docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );

beforeAll(async () => {
  if (!existsSync(BUNDLED_CLI))
    throw new Error(`${BUNDLED_CLI} is missing: run node scripts/build-bins.mjs first`);
  registry = await startLocalRegistry({ base: image, auth: true });
  // Behind its htpasswd the registry serves no one without the login.
  expect((await fetch(`http://${registry.host}/v2/`)).status).toBe(401);
  const pushed = await registry.push('library/plain:1');
  // The operator reaches the registry over a slow link (256 KiB/s): the pull of the image's few MB
  // lasts seconds on any machine, so the CLI's 500 ms polls see it under way.
  link = await slowLink(registry.host, 256 * 1024);
  plain = pushed.replace(registry.host, link.host);
  const authFile = join(process.env.TMPDIR ?? '/tmp', `${RUN}-registry-auth.json`);
  const auth = Buffer.from(`${registry.login!.username}:${registry.login!.password}`).toString('base64');
  await writeFile(authFile, JSON.stringify({ auths: { [link.host]: { auth } } }), { mode: 0o600 });
  op = await startCloudOperator(devnet, {
    run: RUN,
    suiteLabel: SUITE_LABEL,
    image,
    cliBin: BUNDLED_CLI,
    extra: {
      SANDBOX_IMAGE_ALLOWLIST: `${link.host}/library/plain`,
      SANDBOX_REGISTRY_AUTH_FILE: authFile,
      // The most the operator writes: the password must be in none of it.
      LOG_LEVEL: 'debug',
    },
  });
}, 600_000);

afterAll(async () => {
  await op?.close();
  await link?.close();
  await registry?.close();
  if (plain)
    await docker
      .getImage(plain)
      .remove({ force: true })
      .catch(() => {});
}, 120_000);

describe('a registry image through the CLI, pulled with the operator’s login', () => {
  it('attack: a create that names credentials of its own in the image is refused before any pull', async () => {
    // The user's guess at a login rides in the (public) job input; the operator must not use it.
    const withUser = plain.replace(link!.host, `someone:guess@${link!.host}`);
    const r = await op!.cli(['create', '--json', '--image', withUser]);
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr).toMatch(/PROVISION_FAILED.*failed at validation: image is not an image reference/);
    expect(r.stderr).not.toMatch(/image_pull/);
    expect(await engineHas(plain)).toBe(false);
  }, 180_000);

  it('create --image pulls through the operator’s login; the CLI shows image_pull and the pull’s progress; the sandbox runs it by digest', async () => {
    expect(await engineHas(plain)).toBe(false);
    const r = op!.ok(await op!.cli(['create', '--json', '--name', 'from-registry', '--image', plain]));
    // Nothing but progress on stderr (the polling loop once piled listeners on the CLI's signal
    // until Node printed a MaxListenersExceededWarning into it).
    expect(r.stderr).not.toMatch(/Warning/);
    // The phases in order, the pull's reading between image_pull and container_create.
    const lines = r.stderr.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const pull = at(/^\s+image_pull$/);
    const pulled = at(
      new RegExp(`^\\s+pulled ${plain.replace(/[.:/]/g, '\\$&')}: [1-9]\\d* layers, \\d+\\.\\d MB$`),
    );
    const create = at(/^\s+container_create$/);
    expect(pull, r.stderr).toBeGreaterThanOrEqual(0);
    expect(pulled, r.stderr).toBeGreaterThan(pull);
    expect(create, r.stderr).toBeGreaterThan(pulled);
    // The readings under way: more than one, each `pulling <ref>: done/all layers, MB/MB`, the
    // bytes never going back.
    const readings = lines.slice(pull + 1, pulled);
    expect(readings.length, r.stderr).toBeGreaterThanOrEqual(2);
    let last = -1;
    for (const l of readings) {
      const m = /^\s+pulling (\S+): \d+\/\d+ layers, (\d+\.\d)\/\d+\.\d MB$/.exec(l);
      expect(m?.[1], l).toBe(plain);
      expect(Number(m![2])).toBeGreaterThanOrEqual(last);
      last = Number(m![2]);
    }

    const id = (JSON.parse(r.stdout) as { sandbox: { id: string } }).sandbox.id;
    const got = JSON.parse(op!.ok(await op!.cli(['get', id, '--json'])).stdout) as { image: string };
    expect(got.image).toMatch(new RegExp(`^${link!.host}/library/plain@sha256:[0-9a-f]{64}$`));
    expect(op!.ok(await op!.cli(['exec', id, '--', 'id -u; cat /etc/debian_version'])).stdout).toMatch(
      /^1000\n\d+/,
    );
    op!.ok(await op!.cli(['delete', id]));
    // The operator's log (debug) holds neither the password nor the login's base64.
    const log = op!.log();
    expect(log).not.toContain(registry!.login!.password);
    expect(log).not.toContain(JSON.parse(registry!.dockerAuthJson()).auths[registry!.host].auth);
  }, 300_000);
});
