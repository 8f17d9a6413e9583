// The pieces of per-key revocation that need no container: the fingerprint of a key line equals
// ssh-keygen's (so sshd's "Accepted publickey" line names the same key the operator revoked), that
// line is read out of sshd's log and nothing else is, and PUT /ssh/keys takes only bare key lines.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acceptedFingerprint, fingerprintOf, parseKeysBody } from './ssh-tunnel.ts';

const dir = mkdtempSync(join(tmpdir(), 'sidecar-ssh-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('per-key revocation', () => {
  it('fingerprints a key line as ssh-keygen does (ed25519 and RSA)', () => {
    for (const [t, bits] of [
      ['ed25519', []],
      ['rsa', ['-b', '2048']],
    ] as const) {
      const f = join(dir, t);
      execFileSync('ssh-keygen', ['-q', '-t', t, ...bits, '-N', '', '-C', 'c', '-f', f]);
      const line = readFileSync(`${f}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
      const theirs = execFileSync('ssh-keygen', ['-lf', `${f}.pub`])
        .toString()
        .split(' ')[1];
      expect(fingerprintOf(line)).toBe(theirs);
    }
  });

  it("reads the accepted key only from sshd's Accepted publickey line", () => {
    expect(
      acceptedFingerprint(
        'Accepted publickey for agent from UNKNOWN port 65535 ssh2: ED25519 SHA256:abcDEF0123+/xyz',
      ),
    ).toBe('SHA256:abcDEF0123+/xyz');
    expect(
      acceptedFingerprint('Failed publickey for agent from UNKNOWN port 65535 ssh2: ED25519 SHA256:x'),
    ).toBe(undefined);
    expect(acceptedFingerprint('Connection closed by authenticating user agent')).toBe(undefined);
  });

  it('PUT /ssh/keys takes 0 to 32 bare key lines and nothing else', () => {
    expect(parseKeysBody({ authorized_keys: [] })).toEqual([]);
    const k = `ssh-ed25519 ${'A'.repeat(68)}`;
    expect(parseKeysBody({ authorized_keys: [k] })).toEqual([k]);
    expect(() => parseKeysBody({ authorized_keys: [`command="sh" ${k}`] })).toThrow();
    expect(() => parseKeysBody({ authorized_keys: [`${k}\nssh-ed25519 ${'B'.repeat(68)}`] })).toThrow();
    expect(() => parseKeysBody({})).toThrow();
    expect(() => parseKeysBody({ authorized_keys: Array(33).fill(k) })).toThrow();
  });
});
