// Issue 29, engine loss and return, on a dockerd of this test's own (testing/private-engine.ts:
// own socket, roots and containerd, no bridge, no iptables; sandboxes with egress none), so it
// can be killed and restarted while every other test keeps the shared engine: 10 running
// sandboxes and an in-flight create, dockerd killed -9 and started again; the runtime says the
// engine is down while it is, then finishes the create (one outcome) and adopts every sandbox
// back with its files and token (testing/engine-restart-scenario.ts; the serial stage runs the
// same scenario on the shared engine: engine-restart.serial-test.ts).
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { DockerDriver } from '../docker/driver.ts';
import { engineRestartScenario } from './testing/engine-restart-scenario.ts';
import { type PrivateEngine, startPrivateEngine } from './testing/private-engine.ts';
import { makeRig, type TestRig } from './testing/rig.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 300_000 });

const image = inject('sandboxImage');
let engine: PrivateEngine;
let rig: TestRig;

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test runs a dockerd of its own and must run as root');
  engine = await startPrivateEngine({ copyImages: [image] });
  rig = await makeRig(
    image,
    { egress: 'none', healthTimeoutMs: 60_000, engineWaitMs: 180_000 },
    { driver: new DockerDriver(engine.docker) },
  );
});

afterAll(async () => {
  await rig?.cleanup().catch(() => {});
  await engine?.destroy();
});

describe('the Docker engine killed and restarted under running sandboxes (a private dockerd)', () => {
  it('degraded while gone; the in-flight create finishes once; every sandbox adopted back', async () => {
    const figures = await engineRestartScenario(rig, engine, 10);
    console.info(`[engine-restart private dockerd] ${JSON.stringify(figures)}`);
    expect(figures.sandboxes).toBe(10);
  });
});
