// Workspaces held to disk_gb on the real engine (SANDBOX_WORKSPACE_DISK=loop): writing past the
// limit fails inside the sandbox with "No space left on device" while another sandbox and the
// operator's store keep working; the limit survives stop/resume and a warm round trip; the disk
// is released with its volume. Needs root (loop devices), as the operator here runs.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { currentSuiteRuntime, makeRig, sidecarExec, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 300_000 });

const image = inject('sandboxImage');
const owner = '0x00000000000000000000000000000000000000dd';
let rig: TestRig;

beforeAll(async () => {
  rig = await makeRig(image, { workspaceDisk: 'loop', gcHotRetentionSeconds: 100 });
});
afterAll(async () => {
  await rig?.cleanup();
});

const exec = (id: string, cmd: string) => sidecarExec(rig.manager.sidecarEndpoint(id), cmd, 120_000);
const attached = (img: string) => execFileSync('losetup', ['-j', img], { encoding: 'utf8' }).trim();

describe('workspace disk limit', () => {
  it('a write past disk_gb fails with "no space" in that sandbox only; the limit is in the view', async () => {
    const small = await rig.manager.create({ owner, serviceId: 1, callId: 'disk-1', diskGb: 1 });
    const other = await rig.manager.create({ owner, serviceId: 1, callId: 'disk-2', diskGb: 2 });
    expect(small.resources).toMatchObject({ diskGb: 1, workspaceDisk: 'loop-ext4' });
    const disks = rig.manager.driver.disks!;

    // The image's home (dotfiles, owned by the agent) is there, and the size is the limit (find,
    // not stat/ls: coreutils' statx flags are refused by the gVisor Debian ships; README).
    const home = await exec(
      small.id,
      'find /home/agent -maxdepth 0 -printf "%u\\n"; find /home/agent -mindepth 1 -maxdepth 1 -printf "%f\\n"; df -B1M --output=size /home/agent',
    );
    expect(home.stdout).toContain('agent\n');
    expect(home.stdout).toContain('.bashrc');
    expect(home.stdout).not.toContain('lost+found');
    const sizeMb = Number(home.stdout.trim().split('\n').at(-1));
    expect(sizeMb).toBeGreaterThan(900);
    expect(sizeMb).toBeLessThanOrEqual(1024);
    // Mounted nosuid,nodev: a set-uid file or a device node in the workspace grants nothing. Under
    // gVisor the sandbox sees its gofer's 9p mount; the host mount the gofer reads through is checked.
    const mount =
      currentSuiteRuntime() === 'runc'
        ? (await exec(small.id, "grep ' /home/agent ' /proc/mounts")).stdout
        : ((await readFile('/proc/self/mounts', 'utf8'))
            .split('\n')
            .find((l) => l.includes(`/volumes/${small.volumeName}/_data `)) ?? '');
    expect(mount.split(' ')[3]?.split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));

    const fill = await exec(
      small.id,
      'dd if=/dev/zero of=/home/agent/fill bs=1M count=1200 2>&1; echo "rc=$?"',
    );
    expect(fill.stdout).toMatch(/No space left on device/);
    expect(fill.stdout).toMatch(/rc=1/);
    // The other sandbox and the operator's store are unaffected.
    expect((await exec(other.id, 'head -c 50000000 /dev/zero > /home/agent/x && echo ok')).stdout).toBe(
      'ok\n',
    );
    await rig.store.collection('probe').put('k', { v: 'x'.repeat(100_000) });
    expect(await rig.store.collection<{ v: string }>('probe').get('k')).toBeDefined();

    // Stop/resume keeps the disk (and what it holds); freeing space makes writes work again. No
    // loop device outlives the mount: it is attached again at the start.
    const img0 = disks.image(small.volumeName);
    expect(attached(img0)).toContain('/dev/loop');
    await rig.manager.stop(small.id);
    expect(attached(img0)).toBe('');
    await rig.manager.resume(small.id);
    expect(
      (await exec(small.id, 'rm /home/agent/fill && echo hi > /home/agent/f && cat /home/agent/f')).stdout,
    ).toBe('hi\n');

    // hot -> warm drops the volume and its disk; resume builds a new limited disk from the archive.
    const img = disks.image(small.volumeName);
    await rig.manager.stop(small.id);
    await rig.manager.gcTick(rig.manager.get(small.id).tierSince! + 100_000);
    expect(rig.manager.get(small.id).tier).toBe('warm');
    expect(existsSync(img)).toBe(false);
    await rig.manager.resume(small.id);
    expect(attached(img)).toContain('/dev/loop');
    const again = await exec(
      small.id,
      'cat /home/agent/f; dd if=/dev/zero of=/home/agent/fill bs=1M count=1200 2>&1',
    );
    expect(again.stdout).toMatch(/^hi\n/);
    expect(again.stdout).toMatch(/No space left on device/);

    // Delete releases the loop device and the file; a container removed behind the operator's
    // back (with its volume) leaves no loop device either.
    await rig.manager.delete(small.id);
    expect(existsSync(img)).toBe(false);
    expect(attached(img)).toBe('');
    const otherImg = disks.image(other.volumeName);
    await rig.manager.driver.docker.getContainer(other.containerId!).remove({ force: true });
    await rig.manager.driver.docker.getVolume(other.volumeName).remove();
    expect(attached(otherImg)).toBe('');
    await rig.manager.delete(other.id);
  });
});
