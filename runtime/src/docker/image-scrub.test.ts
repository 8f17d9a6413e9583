// The docker-save scrubber against a real engine: a committed container's env (container_config)
// never reaches the archive, and the archive loads back under the given tag with the same files.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { DockerDriver } from './driver.ts';
import { configOnlyArchive } from './image-scrub.ts';

// Real containers on a shared 2-core machine: allow for a slow engine.
vi.setConfig({ testTimeout: 180_000 });

const image = inject('sandboxImage');
const driver = new DockerDriver();
const tag = `agent-sandbox-snapshot:scrubtest-${randomBytes(4).toString('hex')}`;
const labels = { 'agent-sandbox.test': '1', 'agent-sandbox.suite': 'runtime-scrub' };
const cleanup: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

describe('scrubSavedImage', () => {
  it('drops container_config from a committed image on its way to disk and loads back', async () => {
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    const c = await driver.docker.createContainer({
      Image: image,
      Entrypoint: ['sh', '-c', 'echo marker > /root/marker.txt'],
      Env: [`API_KEY=${secret}`],
      Labels: labels,
    });
    cleanup.push(() => driver.removeContainer(c.id));
    await c.start();
    await c.wait();
    const dirty = await driver.commit(c.id, 'agent-sandbox-snapshot', 'scrub-dirty', {
      baseImageEnv: await driver.imageEnv(image),
      containerEnvKeys: ['API_KEY'],
      labels,
    });
    cleanup.push(() => driver.removeImage(dirty));
    // Docker itself keeps the committing container's config (the reason the scrubber exists).
    const inspected = await driver.docker.getImage(dirty).inspect();
    expect(JSON.stringify(inspected.Config)).not.toContain(secret);
    const dir = await mkdtemp(join(tmpdir(), 'asbx-scrub-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'image.tar');
    await driver.saveImage(dirty, file, tag);
    expect((await readFile(file)).includes(secret)).toBe(false);
    await driver.removeImage(dirty);
    await driver.loadImage(file);
    cleanup.push(() => driver.removeImage(tag));
    const loaded = await driver.inspectImage(tag);
    expect(loaded).toBeDefined();
    const check = await driver.docker.createContainer({
      Image: tag,
      Entrypoint: ['cat', '/root/marker.txt'],
      Labels: labels,
    });
    cleanup.push(() => driver.removeContainer(check.id));
    await check.start();
    await check.wait();
    const logs = (await check.logs({ stdout: true })).toString('utf8');
    expect(logs).toContain('marker');
  });
});

describe('scrubImage (config-only load)', () => {
  it('replaces a committed image by one without container config, same files, no layer re-read', async () => {
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    const c = await driver.docker.createContainer({
      Image: image,
      Entrypoint: ['sh', '-c', 'echo fast > /root/fast.txt'],
      Env: [`API_KEY=${secret}`],
      Labels: labels,
    });
    cleanup.push(() => driver.removeContainer(c.id));
    await c.start();
    await c.wait();
    const fastTag = `${tag}-fast`;
    const dirty = await driver.commit(c.id, 'agent-sandbox-snapshot', 'scrub-fast', {
      baseImageEnv: await driver.imageEnv(image),
      containerEnvKeys: ['API_KEY'],
      labels,
    });
    const slow = vi.spyOn(driver, 'scrubImageInEngine');
    const clean = await driver.scrubImage(dirty, fastTag);
    cleanup.push(() => driver.removeImage(clean));
    expect(slow).not.toHaveBeenCalled();
    expect(await driver.inspectImage(dirty)).toBeUndefined();
    const img = driver.docker.getImage(clean);
    const text = JSON.stringify(await img.inspect()) + JSON.stringify(await img.history());
    expect(text).not.toContain(secret);
    expect((await img.inspect()).Config.Labels).toMatchObject(labels);
    // Already clean: returned as is.
    expect(await driver.scrubImage(clean, fastTag)).toBe(clean);
    const check = await driver.docker.createContainer({
      Image: clean,
      Entrypoint: ['cat', '/root/fast.txt'],
      Labels: labels,
    });
    cleanup.push(() => driver.removeContainer(check.id));
    await check.start();
    await check.wait();
    expect((await check.logs({ stdout: true })).toString('utf8')).toContain('fast');
  });

  it('declines (undefined) when the history cannot say which entries made a layer', () => {
    const info = {
      Architecture: 'amd64',
      Os: 'linux',
      Created: '2026-01-01T00:00:00Z',
      Config: {},
      RootFS: { Type: 'layers', Layers: ['sha256:a', 'sha256:b'] },
    };
    const history = [
      { Created: 2, CreatedBy: 'zero-size layer', Size: 0 },
      { Created: 1, CreatedBy: 'base', Size: 10 },
    ];
    expect(configOnlyArchive(info, history, 'x:y')).toBeUndefined();
    const ok = configOnlyArchive(
      info,
      [{ Created: 3, CreatedBy: 'top', Size: 5 }, ...history.slice(1)],
      'x:y',
    );
    expect(ok?.length).toBeGreaterThan(1024);
  });
});
