// Reading the Debian mirror from apt's sources (deb822 and one-line formats) instead of hard-coding a host.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { debianMirror, parseDeb822Sources, parseOneLineSources, pickDebianMirror } from './mirror.ts';

const DEB822 = `Types: deb
# a comment
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
`;

describe('debian mirror', () => {
  it('parses deb822 stanzas, skipping disabled ones', () => {
    const s = parseDeb822Sources(DEB822);
    expect(s).toHaveLength(2);
    expect(pickDebianMirror(s, 'bookworm')).toBe('http://mirror.example/debian');
  });

  it('parses one-line sources with options', () => {
    const s = parseOneLineSources(
      'deb [arch=amd64 signed-by=/k.gpg] https://deb.example/debian bookworm main contrib\n# deb http://x y z',
    );
    expect(pickDebianMirror(s, 'bookworm')).toBe('https://deb.example/debian');
  });

  it('skips security and third-party suites', () => {
    const s = parseOneLineSources(
      'deb https://pkgs.example/apt cloud-sdk-bookworm main\ndeb http://sec.example/debian-security bookworm main',
    );
    expect(pickDebianMirror(s, 'bookworm')).toBeUndefined();
  });

  it('reads an apt directory and fails with a clear error when nothing serves the suite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'apt-'));
    await mkdir(join(dir, 'sources.list.d'));
    await writeFile(join(dir, 'sources.list.d', 'debian.sources'), DEB822);
    expect(debianMirror('bookworm', dir)).toBe('http://mirror.example/debian');
    expect(() => debianMirror('trixie', dir)).toThrow(/AGENT_SANDBOX_DEBIAN_MIRROR/);
  });

  it("finds this machine's mirror", () => {
    expect(debianMirror('bookworm')).toMatch(/^https?:\/\//);
  });
});
