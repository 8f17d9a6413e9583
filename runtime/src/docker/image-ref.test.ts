import { describe, expect, it } from 'vitest';
import { allowListed, parseImageRef, pullRef } from './image-ref.ts';
import { parseDockerAuths } from './registry-pull.ts';

const D = `sha256:${'a'.repeat(64)}`;

describe('image references', () => {
  it('parses registry, repository, tag and digest; a bare name names no registry', () => {
    expect(parseImageRef('127.0.0.1:5000/team/app:1')).toEqual({
      registry: '127.0.0.1:5000',
      repository: 'team/app',
      tag: '1',
      digest: undefined,
    });
    expect(parseImageRef(`reg.example.com/app@${D}`)).toMatchObject({
      registry: 'reg.example.com',
      digest: D,
    });
    expect(parseImageRef('custom:1')).toMatchObject({ registry: undefined, repository: 'custom', tag: '1' });
    expect(parseImageRef('team/app')).toMatchObject({ registry: undefined, repository: 'team/app' });
    expect(parseImageRef('localhost/app')?.registry).toBe('localhost');
    expect(pullRef(parseImageRef('r.io/a')!)).toBe('r.io/a:latest');
    expect(pullRef(parseImageRef(`r.io/a:1@${D}`)!)).toBe(`r.io/a@${D}`);
  });

  it('refuses what is not a reference', () => {
    for (const bad of [
      '',
      'UPPER/app',
      'r.io/a@sha256:short',
      'r.io/a:',
      'a b',
      'r.io//a',
      '../x',
      'r.io/a:1:2',
      '-x',
    ]) {
      expect(parseImageRef(bad), bad).toBeUndefined();
    }
  });

  it('allow-list entries: exact, repository (any tag or digest), registry prefix; never a bare wildcard', () => {
    const list = [
      'custom:1',
      'r.io/team/app',
      'q.io/pinned:2',
      `p.io/x@${D}`,
      '127.0.0.1:5000/lib/*',
      '*',
      'hub/*',
    ];
    expect(allowListed('custom:1', list)).toBe(true);
    expect(allowListed('custom:2', list)).toBe(false);
    expect(allowListed('r.io/team/app:9', list)).toBe(true);
    expect(allowListed(`r.io/team/app@${D}`, list)).toBe(true);
    expect(allowListed('r.io/team/app2:1', list)).toBe(false);
    expect(allowListed('r.io/team/app/sub:1', list)).toBe(false);
    expect(allowListed('q.io/pinned:2', list)).toBe(true);
    expect(allowListed('q.io/pinned:3', list)).toBe(false);
    expect(allowListed(`q.io/pinned@${D}`, list)).toBe(false);
    expect(allowListed(`p.io/x@${D}`, list)).toBe(true);
    expect(allowListed(`p.io/x@sha256:${'b'.repeat(64)}`, list)).toBe(false);
    expect(allowListed('127.0.0.1:5000/lib/debian:12', list)).toBe(true);
    expect(allowListed('127.0.0.1:5000/library/debian:12', list)).toBe(false);
    expect(allowListed('127.0.0.1:5001/lib/debian:12', list)).toBe(false);
    // `*` and a prefix without a registry allow nothing (they would mean Docker Hub).
    expect(allowListed('debian:12', list)).toBe(false);
    expect(allowListed('hub/app:1', list)).toBe(false);
    expect(allowListed('evil.io/x:1', list)).toBe(false);
  });

  it('reads the operator logins from a docker config.json (auth or username/password)', () => {
    const text = JSON.stringify({
      auths: {
        'https://reg.example.com/v1/': { auth: Buffer.from('ops:s3cr:et').toString('base64') },
        '127.0.0.1:5000': { username: 'u', password: 'p' },
        'broken.io': { auth: 'bm9jb2xvbg==' },
      },
    });
    expect(parseDockerAuths(text)).toEqual({
      'reg.example.com': { username: 'ops', password: 's3cr:et' },
      '127.0.0.1:5000': { username: 'u', password: 'p' },
    });
  });
});
