// Startup configuration: required token, defaults, and the child env that never carries the token.
import { describe, expect, it } from 'vitest';
import { loadConfig, stripPrivateEnv, withImageEnv } from './config.ts';

describe('loadConfig', () => {
  it('refuses to start without a token, saying which variable is missing', () => {
    expect(() => loadConfig({})).toThrow(/SIDECAR_AUTH_TOKEN is required/);
    expect(() => loadConfig({ SIDECAR_AUTH_TOKEN: 'short' })).toThrow(/at least 16/);
  });

  it('applies the documented defaults', () => {
    const c = loadConfig({ SIDECAR_AUTH_TOKEN: 'a'.repeat(64) });
    expect(c).toMatchObject({
      port: 8080,
      workspaceRoot: '/home/agent',
      uid: 1000,
      gid: 1000,
      outputLimitBytes: 1024 * 1024,
      sseKeepAliveMs: 15_000,
    });
  });

  it('rejects malformed numbers', () => {
    expect(() => loadConfig({ SIDECAR_AUTH_TOKEN: 'a'.repeat(64), SIDECAR_PORT: 'eighty' })).toThrow(
      /SIDECAR_PORT/,
    );
  });

  it('gives children the sandbox env without the token', () => {
    const c = loadConfig({ SIDECAR_AUTH_TOKEN: 'a'.repeat(64), OPENAI_API_KEY: 'k' });
    expect(c.childEnv).toEqual({ OPENAI_API_KEY: 'k' });
    expect(stripPrivateEnv({ SIDECAR_AUTH_TOKEN: 'x', A: 'b', U: undefined })).toEqual({ A: 'b' });
  });
});

describe('withImageEnv (a registry image, the sidecar mounted)', () => {
  it("children get the image's values; the container's blank copies, the kit's own env and the sidecar's names never come from it", () => {
    const env = {
      SIDECAR_IMAGE_ENV: JSON.stringify({
        LD_PRELOAD: '/x.so',
        PATH: '/opt/bin:/usr/bin',
        SIDECAR_PORT: '1',
        AGENT_HOME: '/',
      }),
      LD_PRELOAD: '',
      PATH: '/usr/bin',
      OPENSSL_CONF: '/.agent-sandbox/kit/etc/openssl.cnf',
      HOME: '/.agent-sandbox',
      SIDECAR_PORT: '8080',
      SIDECAR_AUTH_TOKEN: 'secret',
      NODE_ENV: 'production',
    };
    expect(withImageEnv(env)).toEqual({
      LD_PRELOAD: '/x.so',
      PATH: '/opt/bin:/usr/bin',
      SIDECAR_PORT: '8080',
      NODE_ENV: 'production',
    });
    expect(withImageEnv({ SIDECAR_IMAGE_ENV: 'not json', A: '1' })).toEqual({ A: '1' });
  });
});
