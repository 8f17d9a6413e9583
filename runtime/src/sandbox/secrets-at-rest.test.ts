// No secret and no sidecar token in any image or file the runtime writes, on the real engine:
// after each path that writes one (POST snapshot, stop's auto-commit, hot->warm, warm->cold,
// resume from cold, secrets wipe + a new snapshot), every image config and history of this
// operator (dangling ones included) and every file under the data dir is scanned.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { LABEL_ID, LABEL_OPERATOR } from '../docker/labels.ts';
import { makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 600_000 });

const image = inject('sandboxImage');
let rig: TestRig;

beforeAll(async () => {
  rig = await makeRig(image, {
    gcHotRetentionSeconds: 100,
    gcWarmRetentionSeconds: 200,
    gcColdRetentionSeconds: 300,
  });
});
afterAll(async () => {
  await rig?.cleanup();
});

async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await allFiles(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Whether any needle occurs in the stream (needles may straddle chunks). */
async function streamHolds(stream: AsyncIterable<Buffer>, needles: string[]): Promise<string | undefined> {
  const keep = Math.max(...needles.map((n) => n.length));
  let tail = Buffer.alloc(0);
  for await (const chunk of stream) {
    const buf = Buffer.concat([tail, chunk]);
    const hit = needles.find((n) => buf.includes(n));
    if (hit) return hit;
    tail = buf.subarray(Math.max(0, buf.length - keep));
  }
  return undefined;
}

/**
 * Every place a value could be at rest: image configs + histories, and files under the data dir;
 * with `layers`, also every byte of the operator's images (`docker save`: layers included).
 */
async function scan(step: string, needles: string[], opts: { layers?: boolean } = {}): Promise<void> {
  const docker = rig.manager.driver.docker;
  const images = await docker.listImages({
    all: true,
    filters: { label: [`${LABEL_OPERATOR}=${rig.operatorId}`] },
  });
  const dangling = await docker.listImages({ filters: { dangling: ['true'] } });
  const ids = new Set([...images, ...dangling].map((i) => i.Id));
  for (const id of ids) {
    const img = docker.getImage(id);
    // Another user of the engine may remove its own dangling image meanwhile.
    const info = await img.inspect().catch(() => null);
    if (!info) continue;
    const text = JSON.stringify(info) + JSON.stringify(await img.history());
    for (const n of needles) expect(text.includes(n), `${step}: image ${id} holds a secret`).toBe(false);
  }
  if (opts.layers) {
    for (const i of images) {
      const saved = (await docker.getImage(i.Id).get()) as unknown as AsyncIterable<Buffer>;
      expect(await streamHolds(saved, needles), `${step}: a layer of image ${i.Id} holds a secret`).toBe(
        undefined,
      );
    }
  }
  for (const f of await allFiles(rig.dir)) {
    const bytes = await readFile(f);
    for (const n of needles) expect(bytes.includes(n), `${step}: file ${f} holds a secret`).toBe(false);
  }
}

describe('secrets at rest', () => {
  it('no image, tar or file holds a secret or the token after any path that writes one', async () => {
    const rec = await rig.manager.create({
      owner: '0x00000000000000000000000000000000000000bb',
      serviceId: 1,
      callId: 'at-rest-1',
    });
    const token = rec.token;
    // The config-only scrub (no layer read) is the path taken here, not the full save/load.
    const slow = vi.spyOn(rig.manager.driver, 'scrubImageInEngine');
    const first = `first-secret-${token.slice(0, 8)}`;
    const second = `second-secret-${token.slice(8, 16)}`;
    await rig.manager.injectSecrets(rec.id, { OPENAI_API_KEY: first });
    await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'echo kept > /home/agent/k.txt');

    // What a crash between a commit and its scrub would leave: an unscrubbed image of the sandbox.
    const live = rig.manager.get(rec.id);
    await rig.manager.driver.commit(live.containerId!, 'agent-sandbox-snapshot', `${rec.id}-crash`, {
      baseImageEnv: [],
      containerEnvKeys: [],
      labels: { [LABEL_ID]: rec.id, [LABEL_OPERATOR]: rig.operatorId },
    });

    // POST …/snapshot while running (it also removes the leftover).
    const s1 = await rig.manager.snapshot(rec.id);
    await scan('snapshot', [token, first], { layers: true });

    // New secrets, a resume from that snapshot image, then another snapshot: the first image is
    // still used by the running container (dangling once the tag moves).
    await rig.manager.stop(rec.id);
    await scan('stop auto-commit', [token, first]);
    await rig.manager.resume(rec.id);
    await rig.manager.injectSecrets(rec.id, { OPENAI_API_KEY: second });
    const s2 = await rig.manager.snapshot(rec.id);
    expect(s2.snapshotImageId).not.toBe(s1.snapshotImageId);
    await scan('snapshot after new secrets', [token, first, second], { layers: true });

    // secrets wipe: no image left holds the wiped value.
    await rig.manager.wipeSecrets(rec.id);
    await rig.manager.snapshot(rec.id);
    await scan('wipe + snapshot', [token, first, second]);

    // Through the GC tiers and back.
    await rig.manager.stop(rec.id);
    const t = rig.manager.get(rec.id).tierSince!;
    await rig.manager.gcTick(t + 100_000);
    expect(rig.manager.get(rec.id).tier).toBe('warm');
    await scan('hot->warm', [token, first, second]);
    await rig.manager.gcTick(t + 400_000);
    expect(rig.manager.get(rec.id).tier).toBe('cold');
    await scan('warm->cold', [token, first, second]);
    await rig.manager.resume(rec.id);
    const out = await sidecarExec(rig.manager.sidecarEndpoint(rec.id), 'cat /home/agent/k.txt');
    expect(out.stdout).toBe('kept\n');
    await scan('resume from cold', [token, first, second]);

    await rig.manager.delete(rec.id);
    await scan('delete', [token, first, second]);
    expect(slow).not.toHaveBeenCalled();
  });
});
