// gVisor through the real programs: an `agent-sandbox-operator run` process offering runsc beside
// its default runc (SANDBOX_RUNTIMES_ALLOWED=runsc) on a fresh cloud service of the shared devnet,
// driven by the bundled `agent-sandbox` CLI. The operator's /api/capabilities says which runtimes
// a create may name; `create --runtime runsc` makes a sandbox whose code sees gVisor's kernel, and
// its view and its …/capabilities say runsc; a plain create stays on runc; an unknown runtime is
// refused by the CLI (the operator's own refusal of one it does not offer: runtime runsc.test.ts).
import { existsSync } from 'node:fs';
import { release } from 'node:os';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signInOverHttp } from '../../runtime/src/api/testing/sign-in.ts';
import { BUNDLED_CLI, type CloudOperator, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-rt-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-runtime-cli';
const docker = new Docker();
let op: CloudOperator | undefined;

beforeAll(async () => {
  if (!existsSync(BUNDLED_CLI))
    throw new Error(`${BUNDLED_CLI} is missing: run node scripts/build-bins.mjs first`);
  op = await startCloudOperator(devnet, {
    run: RUN,
    suiteLabel: SUITE_LABEL,
    image,
    cliBin: BUNDLED_CLI,
    extra: { SANDBOX_RUNTIMES_ALLOWED: 'runsc' },
  });
}, 600_000);

afterAll(async () => {
  await op?.close();
}, 120_000);

const mine = () =>
  docker.listContainers({ all: true, filters: { label: [`agent-sandbox.operator=${op!.operatorId}`] } });

describe('runtimes through the CLI', () => {
  it('an unknown runtime is refused by the CLI before the chain (usage, exit 1); nothing is created', async () => {
    const r = await op!.cli(['create', '--runtime', 'kata']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('--runtime must be runc or runsc, got "kata"');
    expect(r.stderr).not.toContain('job submitted');
    expect(await mine()).toEqual([]);
  }, 180_000);

  it("/api/capabilities names the runtimes; create --runtime runsc runs on gVisor's kernel and says so; a plain create stays on runc", async () => {
    const caps = (await (await fetch(`${op!.url}/api/capabilities`)).json()) as {
      runtimes: { default: string; offered: string[] };
    };
    expect(caps.runtimes).toEqual({ default: 'runc', offered: ['runc', 'runsc'] });

    const g = op!.ok(await op!.cli(['create', '--json', '--name', 'gvisor', '--runtime', 'runsc']));
    const plain = op!.ok(await op!.cli(['create', '--json', '--name', 'plain']));
    const gid = (JSON.parse(g.stdout) as { sandbox: { id: string } }).sandbox.id;
    const pid = (JSON.parse(plain.stdout) as { sandbox: { id: string } }).sandbox.id;

    const view = (id: string) => op!.cli(['get', id, '--json']).then((r) => JSON.parse(op!.ok(r).stdout));
    expect((await view(gid)).runtime).toBe('runsc');
    expect((await view(pid)).runtime).toBe('runc');
    const kernel = (id: string) => op!.cli(['exec', id, '--', 'uname -r; dmesg 2>/dev/null | head -3']);
    const inside = op!.ok(await kernel(gid)).stdout;
    expect(inside.split('\n')[0]).not.toBe(release());
    expect(inside).toMatch(/gVisor/);
    expect(op!.ok(await kernel(pid)).stdout.split('\n')[0]).toBe(release());

    // The sandbox's own capability document (the owner's session) says the same.
    const token = await signInOverHttp(op!.url, op!.owner as Parameters<typeof signInOverHttp>[1]);
    const doc = (id: string) =>
      fetch(`${op!.url}/api/sandboxes/${id}/capabilities`, {
        headers: { authorization: `Bearer ${token}` },
      }).then((r) => r.json() as Promise<{ runtime: string }>);
    expect((await doc(gid)).runtime).toBe('runsc');
    expect((await doc(pid)).runtime).toBe('runc');
    for (const id of [gid, pid]) op!.ok(await op!.cli(['delete', id]));
  }, 300_000);
});
