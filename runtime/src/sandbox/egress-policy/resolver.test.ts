// A sandbox resolver as a real dnsmasq process: it answers as soon as startResolver returns (NXDOMAIN
// for a name no policy allows), stop() ends it, and the resolvers a killed operator left behind
// (its dnsmasq children outlive it) are ended by the next run's sweep, which touches no other
// process named in a pid file.
import { spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freeDnsPort } from './enforcer.ts';
import { startResolver, sweepResolvers } from './resolver.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function start(dir: string, id: string) {
  // A port of the loopback (the real ones listen on the policy bridge's gateway).
  const port = await freeDnsPort('127.0.0.1');
  return startResolver(dir, {
    sandboxId: id,
    operatorId: 'resolver-test',
    host: '127.0.0.1',
    port,
    domains: ['allowed.invalid'],
    upstream: ['127.0.0.1#9'],
  });
}

describe('sandbox resolver process', () => {
  it('answers once started (NXDOMAIN outside the policy); stop() ends it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'asbx-res-'));
    dirs.push(dir);
    const r = await start(dir, `sbx-${'a1'.repeat(16)}`);
    const q = new Resolver({ timeout: 2000, tries: 1 });
    q.setServers([`127.0.0.1:${r.spec.port}`]);
    await expect(q.resolve4('denied.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await r.stop();
    expect(alive(r.child.pid!)).toBe(false);
  });

  it("the sweep ends a killed run's resolvers by pid file, and leaves an unrelated process alone", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'asbx-res-'));
    dirs.push(dir);
    const r = await start(dir, `sbx-${'b2'.repeat(16)}`);
    // A pid file naming a process that is not this dir's dnsmasq (a reused pid): not signalled.
    const other = spawn(process.execPath, ['-e', 'setInterval(()=>{},1000)'], { stdio: 'ignore' });
    await once(other, 'spawn');
    await writeFile(join(dir, `sbx-${'c3'.repeat(16)}.pid`), `${other.pid}\n`);
    const exited = once(r.child, 'exit');
    await sweepResolvers(dir);
    await exited;
    expect(alive(r.child.pid!)).toBe(false);
    expect(alive(other.pid!)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
    other.kill('SIGKILL');
  });
});
