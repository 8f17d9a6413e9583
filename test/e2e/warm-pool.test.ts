// The warm pool end to end, through the real programs: an `agent-sandbox-operator run` process with
// SANDBOX_WARM_POOL=1 on a fresh cloud service of the shared devnet, driven by the `agent-sandbox`
// CLI. The pooled container is unreachable before its claim (`get` of its id exits 3), the on-chain
// create claims it (progress shows pool_claim, same container), its bootstrap token is refused by
// the sidecar afterwards, exec sees the create's env, the pool refills, and delete leaves nothing.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliResult, type CloudOperator, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-pool-${Date.now().toString(36)}`;
const OPERATOR_ID = `${RUN}-operator1`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-warm-pool';
const docker = new Docker();
let op: CloudOperator | undefined;
let operatorUrl = '';

const cli = (args: string[]) => op!.cli(args);
const ok = (r: CliResult) => op!.ok(r);

/** Waits (bounded) until the operator's metrics report `n` pooled containers. */
async function poolReady(n: number): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = await (await fetch(`${operatorUrl}/metrics`)).text();
    if (new RegExp(`^agent_sandbox_warm_pool_ready ${n}$`, 'm').test(text)) return;
    if (Date.now() > deadline) throw new Error(`warm pool never reached ${n}; log:\n${op!.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const mine = async () =>
  (
    await docker.listContainers({ all: true, filters: { label: [`agent-sandbox.operator=${OPERATOR_ID}`] } })
  ).map((c) => ({ id: c.Id, sandboxId: c.Labels['agent-sandbox.id'] ?? '' }));

beforeAll(async () => {
  op = await startCloudOperator(devnet, {
    run: RUN,
    suiteLabel: SUITE_LABEL,
    image,
    // The CLI asks for 1 core, 1024 MB and 5 GB unless told; the pool holds the operator's
    // defaults (1, 1024, 10), and workspaces hold their disk size here (loop disks): match them.
    extra: { SANDBOX_WARM_POOL: '1', SANDBOX_DEFAULT_DISK_GB: '5' },
  });
  operatorUrl = op.url;
}, 180_000);

afterAll(async () => {
  await op?.close();
}, 60_000);

describe('warm pool through the chain and the CLI', () => {
  it('the on-chain create claims the pooled container, which no one could reach before; the pool refills; shutdown removes it', async () => {
    await poolReady(1);
    const [pooled] = await mine();
    expect(pooled).toBeDefined();
    // Before its claim the pooled container is no one's: the owner's CLI cannot see it.
    ok(await cli(['login']));
    expect((await cli(['get', pooled!.sandboxId])).code).toBe(3);
    expect(ok(await cli(['list'])).stdout.trim()).toBe('');

    const r = ok(await cli(['create', '--json', '--name', 'warm', '--env', 'GREETING=from-the-pool']));
    expect(r.stderr).toContain('pool_claim');
    expect(r.stderr).not.toContain('container_create');
    const out = JSON.parse(r.stdout) as { sandbox: { id: string; state: string } };
    expect(out.sandbox).toMatchObject({ id: pooled!.sandboxId, state: 'running' });
    const id = out.sandbox.id;

    // The bootstrap token (still in the container's config) is refused by the sidecar now.
    const info = await docker.getContainer(pooled!.id).inspect();
    const boot = info.Config.Env.find((e) => e.startsWith('SIDECAR_AUTH_TOKEN='))!.split('=')[1];
    const port = info.NetworkSettings.Ports['8080/tcp']?.find((b) => b.HostIp === '127.0.0.1')?.HostPort;
    const direct = await fetch(`http://127.0.0.1:${port}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${boot}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    expect(direct.status).toBe(403);

    expect(ok(await cli(['exec', id, '--', 'echo "$GREETING as $(whoami)"'])).stdout).toBe(
      'from-the-pool as agent\n',
    );
    await poolReady(1);
    const refill = (await mine()).filter((c) => c.sandboxId !== id);
    expect(refill).toHaveLength(1);

    ok(await cli(['delete', id]));
    expect((await mine()).map((c) => c.sandboxId)).toEqual([refill[0]!.sandboxId]);
    // A clean shutdown removes the unclaimed container too.
    const c = op!.child;
    const exited = new Promise((res) => c.once('exit', res));
    c.kill('SIGTERM');
    await exited;
    expect(await mine()).toEqual([]);
  }, 240_000);
});
