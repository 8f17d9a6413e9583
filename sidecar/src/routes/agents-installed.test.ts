// GET /agents says which harness CLIs an agent run would find (executables on its PATH, found,
// not assumed) and whether an agent program overrides them.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

let bin: string;
let withTwo: SidecarFixture;
let withCommand: SidecarFixture;
beforeAll(async () => {
  bin = await mkdtemp(join(tmpdir(), 'harness-bin-'));
  await writeFile(join(bin, 'claude'), '#!/bin/sh\necho claude\n');
  await chmod(join(bin, 'claude'), 0o755);
  await writeFile(join(bin, 'opencode'), '#!/bin/sh\necho opencode\n');
  await chmod(join(bin, 'opencode'), 0o755);
  // Present but not executable: not a harness an agent run could start.
  await writeFile(join(bin, 'codex'), '#!/bin/sh\n');
  await chmod(join(bin, 'codex'), 0o644);
  withTwo = await startSidecarFixture({ PATH: `${bin}:/usr/bin:/bin` });
  withCommand = await startSidecarFixture({ PATH: '/usr/bin:/bin', SIDECAR_AGENT_COMMAND: 'echo hi' });
});
afterAll(async () => {
  await withTwo?.close();
  await withCommand?.close();
  await rm(bin, { recursive: true, force: true });
});

describe('GET /agents', () => {
  it('lists the harnesses whose executable is on the agent PATH', async () => {
    const r = await withTwo.call('GET', '/agents');
    expect(r.json.installed).toEqual(['claude', 'opencode']);
    expect(r.json.agentCommand).toBe(false);
  });

  it('says when an agent program answers every turn', async () => {
    const r = await withCommand.call('GET', '/agents');
    expect(r.json.agentCommand).toBe(true);
    expect(r.json.installed).not.toContain('claude');
  });
});
