// Proves the v4.local implementation against the official PASETO v4 test vectors
// (paseto-standard/test-vectors v4.json: 4-E-1 … 4-E-9 and the failure cases 4-F-1 … 4-F-3).
import { describe, expect, it } from 'vitest';
import { createV4Local, openV4Local, sealV4Local, v4LocalKey } from './paseto-v4-local.ts';

const hex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'));
const utf8 = (s: string) => new TextEncoder().encode(s);
const b64u = (b: Uint8Array) => Buffer.from(b).toString('base64url');

const KEY = '707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f';
const N0 = '0000000000000000000000000000000000000000000000000000000000000000';
const N1 = 'df654812bac492663825520ba2f6e67cf5ca5bdc13d4e7507a98cc4c2fcc3ad8';
const SECRET_MSG = '{"data":"this is a secret message","exp":"2022-01-01T00:00:00+00:00"}';
const HIDDEN_MSG = '{"data":"this is a hidden message","exp":"2022-01-01T00:00:00+00:00"}';
const KID = '{"kid":"zVhMiPBP9fRf2snEcT7gFTioeA9COcNy9DfgL1W60haN"}';

interface Vector {
  name: string;
  nonce: string;
  token: string;
  payload: string;
  footer: string;
  implicit: string;
}

const VECTORS: Vector[] = [
  {
    name: '4-E-1',
    nonce: N0,
    token:
      'v4.local.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAr68PS4AXe7If_ZgesdkUMvSwscFlAl1pk5HC0e8kApeaqMfGo_7OpBnwJOAbY9V7WU6abu74MmcUE8YWAiaArVI8XJ5hOb_4v9RmDkneN0S92dx0OW4pgy7omxgf3S8c3LlQg',
    payload: SECRET_MSG,
    footer: '',
    implicit: '',
  },
  {
    name: '4-E-2',
    nonce: N0,
    token:
      'v4.local.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAr68PS4AXe7If_ZgesdkUMvS2csCgglvpk5HC0e8kApeaqMfGo_7OpBnwJOAbY9V7WU6abu74MmcUE8YWAiaArVI8XIemu9chy3WVKvRBfg6t8wwYHK0ArLxxfZP73W_vfwt5A',
    payload: HIDDEN_MSG,
    footer: '',
    implicit: '',
  },
  {
    name: '4-E-3',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WkwMsYXw6FSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t6-tyebyWG6Ov7kKvBdkrrAJ837lKP3iDag2hzUPHuMKA',
    payload: SECRET_MSG,
    footer: '',
    implicit: '',
  },
  {
    name: '4-E-4',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WiA8rd3wgFSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t4gt6TiLm55vIH8c_lGxxZpE3AWlH4WTR0v45nsWoU3gQ',
    payload: HIDDEN_MSG,
    footer: '',
    implicit: '',
  },
  {
    name: '4-E-5',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WkwMsYXw6FSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t4x-RMNXtQNbz7FvFZ_G-lFpk5RG3EOrwDL6CgDqcerSQ.eyJraWQiOiJ6VmhNaVBCUDlmUmYyc25FY1Q3Z0ZUaW9lQTlDT2NOeTlEZmdMMVc2MGhhTiJ9',
    payload: SECRET_MSG,
    footer: KID,
    implicit: '',
  },
  {
    name: '4-E-6',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WiA8rd3wgFSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t6pWSA5HX2wjb3P-xLQg5K5feUCX4P2fpVK3ZLWFbMSxQ.eyJraWQiOiJ6VmhNaVBCUDlmUmYyc25FY1Q3Z0ZUaW9lQTlDT2NOeTlEZmdMMVc2MGhhTiJ9',
    payload: HIDDEN_MSG,
    footer: KID,
    implicit: '',
  },
  {
    name: '4-E-7',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WkwMsYXw6FSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t40KCCWLA7GYL9KFHzKlwY9_RnIfRrMQpueydLEAZGGcA.eyJraWQiOiJ6VmhNaVBCUDlmUmYyc25FY1Q3Z0ZUaW9lQTlDT2NOeTlEZmdMMVc2MGhhTiJ9',
    payload: SECRET_MSG,
    footer: KID,
    implicit: '{"test-vector":"4-E-7"}',
  },
  {
    name: '4-E-8',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WiA8rd3wgFSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t5uvqQbMGlLLNYBc7A6_x7oqnpUK5WLvj24eE4DVPDZjw.eyJraWQiOiJ6VmhNaVBCUDlmUmYyc25FY1Q3Z0ZUaW9lQTlDT2NOeTlEZmdMMVc2MGhhTiJ9',
    payload: HIDDEN_MSG,
    footer: KID,
    implicit: '{"test-vector":"4-E-8"}',
  },
  {
    name: '4-E-9',
    nonce: N1,
    token:
      'v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WiA8rd3wgFSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t6tybdlmnMwcDMw0YxA_gFSE_IUWl78aMtOepFYSWYfQA.YXJiaXRyYXJ5LXN0cmluZy10aGF0LWlzbid0LWpzb24',
    payload: HIDDEN_MSG,
    footer: "arbitrary-string-that-isn't-json",
    implicit: '{"test-vector":"4-E-9"}',
  },
];

// Expected failures. 4-F-1: a v4.local token offered to an implementation holding the v4.public
// key pair; 4-F-2: a v4.public token offered to v4.local; 4-F-3: a v3.local token offered to v4.
const FAILURES = [
  {
    name: '4-F-1',
    keys: [
      '1eb9dbbbbc047c03fd70604e0071f0987e16b28b757225c11f00415d0e20b1a2',
      'b4cbfb43df4ce210727d953e4a713307fa19bb7d9f85041438d9e11b942a3774',
    ],
    token:
      'v4.local.vngXfCISbnKgiP6VWGuOSlYrFYU300fy9ijW33rznDYgxHNPwWluAY2Bgb0z54CUs6aYYkIJ-bOOOmJHPuX_34Agt_IPlNdGDpRdGNnBz2MpWJvB3cttheEc1uyCEYltj7wBQQYX.YXJiaXRyYXJ5LXN0cmluZy10aGF0LWlzbid0LWpzb24',
    implicit: '{"test-vector":"4-F-1"}',
  },
  {
    name: '4-F-2',
    keys: [KEY],
    token:
      'v4.public.eyJpbnZhbGlkIjoidGhpcyBzaG91bGQgbmV2ZXIgZGVjb2RlIn22Sp4gjCaUw0c7EH84ZSm_jN_Qr41MrgLNu5LIBCzUr1pn3Z-Wukg9h3ceplWigpoHaTLcwxj0NsI1vjTh67YB.eyJraWQiOiJ6VmhNaVBCUDlmUmYyc25FY1Q3Z0ZUaW9lQTlDT2NOeTlEZmdMMVc2MGhhTiJ9',
    implicit: '{"test-vector":"4-F-2"}',
  },
  {
    name: '4-F-3',
    keys: [KEY],
    token:
      'v3.local.23e_2PiqpQBPvRFKzB0zHhjmxK3sKo2grFZRRLM-U7L0a8uHxuF9RlVz3Ic6WmdUUWTxCaYycwWV1yM8gKbZB2JhygDMKvHQ7eBf8GtF0r3K0Q_gF1PXOxcOgztak1eD1dPe9rLVMSgR0nHJXeIGYVuVrVoLWQ.YXJiaXRyYXJ5LXN0cmluZy10aGF0LWlzbid0LWpzb24',
    implicit: '{"test-vector":"4-F-3"}',
  },
];

// The vectors' exp (2022-01-01) is in the past; validate claims as of a moment before it.
const BEFORE_EXP = new Date('2021-06-01T00:00:00Z');

describe('PASETO v4.local (official test vectors)', () => {
  const key = v4LocalKey(hex(KEY));

  for (const v of VECTORS) {
    it(`${v.name}: the raw construction reproduces the token byte for byte`, () => {
      const payload = sealV4Local(key, utf8(v.payload), utf8(v.footer), utf8(v.implicit), hex(v.nonce));
      const token = `v4.local.${b64u(payload)}${v.footer ? `.${b64u(utf8(v.footer))}` : ''}`;
      expect(token).toBe(v.token);
      const opened = openV4Local(key, payload, utf8(v.footer), utf8(v.implicit));
      expect(new TextDecoder().decode(opened)).toBe(v.payload);
    });

    it(`${v.name}: the paseto package with our run functions encrypts and decrypts it`, async () => {
      const v4 = createV4Local({ nonce: () => hex(v.nonce) });
      const token = await v4.Encrypt(key, JSON.parse(v.payload) as Record<string, string>, {
        addIssuedAt: false,
        now: BEFORE_EXP,
        ...(v.footer ? { footer: utf8(v.footer) } : {}),
        implicitAssertion: utf8(v.implicit),
      });
      expect(token).toBe(v.token);
      const { claims, footer } = await v4.Decrypt(key, v.token, {
        now: BEFORE_EXP,
        implicitAssertion: utf8(v.implicit),
      });
      expect(claims).toEqual(JSON.parse(v.payload));
      expect(new TextDecoder().decode(footer)).toBe(v.footer);
    });

    it(`${v.name}: fails with a wrong implicit assertion, footer, key or a flipped bit`, async () => {
      const v4 = createV4Local();
      const opts = { now: BEFORE_EXP, implicitAssertion: utf8(v.implicit) };
      await expect(
        v4.Decrypt(key, v.token, { ...opts, implicitAssertion: utf8(`${v.implicit}x`) }),
      ).rejects.toThrow();
      const otherKey = v4LocalKey(hex(KEY.replace(/8f$/, '90')));
      await expect(v4.Decrypt(otherKey, v.token, opts)).rejects.toThrow();
      const [h, p, f] = [v.token.slice(0, 9), ...v.token.slice(9).split('.')] as [string, string, string?];
      const bytes = Buffer.from(p, 'base64url');
      for (const at of [0, 40, bytes.length - 1]) {
        const flipped = Buffer.from(bytes);
        flipped[at] = (flipped[at] as number) ^ 0x01;
        const bad = `${h}${flipped.toString('base64url')}${f ? `.${f}` : ''}`;
        await expect(v4.Decrypt(key, bad, opts)).rejects.toThrow();
      }
      const otherFooter = `${h}${p}.${b64u(utf8('{"kid":"other"}'))}`;
      await expect(v4.Decrypt(key, otherFooter, opts)).rejects.toThrow();
      // And past its exp the package's claim validation refuses it.
      await expect(v4.Decrypt(key, v.token, { implicitAssertion: utf8(v.implicit) })).rejects.toThrow(/exp/i);
    });
  }

  for (const f of FAILURES) {
    it(`${f.name}: is refused`, async () => {
      const v4 = createV4Local();
      for (const k of f.keys) {
        await expect(
          v4.Decrypt(v4LocalKey(hex(k)), f.token, {
            now: BEFORE_EXP,
            implicitAssertion: utf8(f.implicit),
          }),
        ).rejects.toThrow();
      }
    });
  }

  it('refuses a payload shorter than nonce + tag, and keys of the wrong size', () => {
    expect(() => openV4Local(key, new Uint8Array(63), new Uint8Array(), new Uint8Array())).toThrow(
      /too short/,
    );
    expect(() => v4LocalKey(new Uint8Array(31))).toThrow(/32 bytes/);
  });

  it('keeps key bytes out of the handle (nothing to log or serialize)', () => {
    expect(JSON.stringify(key)).not.toContain('112');
    expect(Object.values(key).some((v) => v instanceof Uint8Array)).toBe(false);
  });
});
