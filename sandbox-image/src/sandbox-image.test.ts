// The built sandbox image: its tag is the content hash of the current sources, and it has the promised shape.
import Docker from 'dockerode';
import { describe, expect, inject, it } from 'vitest';
import { baseImageTag } from './base-image.ts';
import { sandboxDockerfile } from './dockerfile.ts';
import { sandboxImageTag } from './sandbox-image.ts';

describe('sandbox image', () => {
  it('is tagged by the content hash of the current sources (the tag the test run built)', async () => {
    const tag = await sandboxImageTag();
    expect(tag).toMatch(/^agent-sandbox:[0-9a-f]{16}$/);
    expect(await sandboxImageTag()).toBe(tag);
    expect(inject('sandboxImage')).toBe(tag);
    expect(await sandboxImageTag({ withHarnesses: true })).toMatch(/^agent-sandbox-harnesses:/);
  });

  it('has tini as init, the sidecar as command, port 8080 and the agent workspace defaults', async () => {
    const info = await new Docker().getImage(inject('sandboxImage')).inspect();
    expect(info.Config.Entrypoint).toEqual(['/usr/bin/tini', '--']);
    expect(info.Config.Cmd).toEqual(['node', '/opt/sidecar/sidecar.cjs']);
    expect(Object.keys(info.Config.ExposedPorts ?? {})).toEqual(['8080/tcp']);
    expect(info.Config.Env).toEqual(
      expect.arrayContaining([
        'SIDECAR_PORT=8080',
        'AGENT_WORKSPACE_ROOT=/home/agent',
        'AGENT_SUBPROCESS_UID=1000',
      ]),
    );
    expect(info.Config.Labels?.['agent-sandbox.image']).toBe('sandbox');
  });

  it('builds FROM the cached base, with the user layer before the bundle so code changes rebuild one layer', () => {
    const df = sandboxDockerfile(baseImageTag(), { withHarnesses: false });
    expect(df.startsWith(`FROM ${baseImageTag()}\n`)).toBe(true);
    expect(df.indexOf('useradd')).toBeLessThan(df.indexOf('COPY sidecar.cjs'));
    expect(baseImageTag()).toMatch(/^agent-sandbox-base:[0-9a-f]{16}$/);
  });
});
