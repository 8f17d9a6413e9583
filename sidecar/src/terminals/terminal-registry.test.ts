// Exited terminals are not kept forever with their scrollback: a hostile or careless client that
// opens and ends shells in a loop holds at most `keep` exited sessions, each for `retentionMs`
// (real PTY sessions; the registry's clock is moved, nothing sleeps).
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type SidecarConfig } from '../config.ts';
import { EXITED_TERMINAL_LIMITS, TerminalRegistry } from './terminal-registry.ts';
import type { TerminalSession } from './terminal-session.ts';

let workspace: string;
let config: SidecarConfig;
beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'sidecar-terms-'));
  await chown(workspace, 1000, 1000);
  config = loadConfig({
    PATH: process.env['PATH'],
    SIDECAR_PORT: '0',
    SIDECAR_AUTH_TOKEN: 'x'.repeat(32),
    AGENT_WORKSPACE_ROOT: workspace,
    AGENT_HOME: workspace,
  });
});
afterAll(() => rm(workspace, { recursive: true, force: true }));

/** Ends the shell and resolves once the session has seen it exit. */
const exit = (s: TerminalSession) =>
  new Promise<void>((resolve) => {
    s.subscribe((ev) => {
      if (ev.type === 'exit') resolve();
    });
    s.write('exit\r');
  });

describe('terminal registry: exited sessions', () => {
  it('keeps only the most recently exited (count), and none past the retention (time)', async () => {
    let offset = 0;
    const reg = new TerminalRegistry(config, {
      keep: 2,
      retentionMs: 60_000,
      now: () => Date.now() + offset,
    });
    try {
      const made: TerminalSession[] = [];
      for (let i = 0; i < 4; i++) {
        const s = reg.create({ cwd: workspace, cols: 80, rows: 24 });
        made.push(s);
        await exit(s);
      }
      const live = reg.create({ cwd: workspace, cols: 80, rows: 24 });
      expect(reg.list().map((s) => s.id)).toEqual([made[2]!.id, made[3]!.id, live.id]);
      expect(() => reg.get(made[0]!.id)).toThrow(/no terminal session/);
      // An exited session can still be read for a while: its exit code and scrollback.
      expect(reg.get(made[3]!.id).summary()).toMatchObject({ status: 'exited', exitCode: 0 });
      offset = 60_001;
      expect(reg.list().map((s) => s.id)).toEqual([live.id]);
      expect(live.running).toBe(true);
    } finally {
      reg.closeAll();
    }
  });

  it('defaults: 16 exited sessions, 15 minutes each', () => {
    expect(EXITED_TERMINAL_LIMITS).toEqual({ keep: 16, retentionMs: 15 * 60_000 });
  });
});
