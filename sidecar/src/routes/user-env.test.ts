// PUT /env: the operator's delivery of the user's env — children see it, the sidecar's own process
// never does, a new delivery replaces the old one, and platform-owned names are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from '../testing/sidecar-fixture.ts';

let fx: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture();
});
afterAll(() => fx.close());

const echo = async (expr: string) =>
  (await fx.call('POST', '/terminals/commands', { command: `echo "${expr}"` })).json.result.stdout.trim();

describe('PUT /env', () => {
  it('needs the token', async () => {
    expect((await fx.call('PUT', '/env', { env: {} }, { token: null })).status).toBe(401);
  });

  it('hands the env to children only and replaces it whole on the next delivery', async () => {
    const r = await fx.call('PUT', '/env', { env: { API_KEY: 'k1', GREETING: 'hi' } });
    expect(r.status).toBe(200);
    expect(r.json.names).toEqual(['API_KEY', 'GREETING']);
    expect(await echo('$API_KEY $GREETING')).toBe('k1 hi');
    expect(process.env['API_KEY']).toBeUndefined();
    await fx.call('PUT', '/env', { env: { GREETING: 'hello' } });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    expect(await echo('${API_KEY:-wiped} $GREETING')).toBe('wiped hello');
  });

  it('refuses platform-owned names with 400 naming the key, keeping the env it had', async () => {
    await fx.call('PUT', '/env', { env: { KEEP: 'yes' } });
    for (const k of ['LD_PRELOAD', 'NODE_OPTIONS', 'AGENT_WORKSPACE_ROOT', 'SIDECAR_AUTH_TOKEN']) {
      const r = await fx.call('PUT', '/env', { env: { OK: '1', [k]: '/tmp/x' } });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toContain(`"${k}"`);
    }
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    expect(await echo('$KEEP ${OK:-unset}')).toBe('yes unset');
  });

  it("a user's SANDBOX_AGENT_COMMAND is the agent program, run as the agent user", async () => {
    await fx.call('PUT', '/env', {
      env: { SANDBOX_AGENT_COMMAND: 'echo "agent $(id -u) got $SIDECAR_AGENT_MESSAGE"' },
    });
    const r = await fx.call('POST', '/agents/run', { identifier: 'default', message: 'ping' });
    expect(r.status).toBe(200);
    expect(r.json.response.trim()).toBe('agent 1000 got ping');
  });
});

// A warm-pool container is started with a bootstrap token; the claim hands the sandbox its own
// token in the same delivery, and from then on only the new one opens the sidecar.
describe('PUT /env with a token (warm-pool claim)', () => {
  it('rotates the bearer token: the old one is refused at once, the new one works', async () => {
    const f = await startSidecarFixture();
    try {
      const next = 'n'.repeat(64);
      const r = await f.call('PUT', '/env', { env: { OWNER_VALUE: 'x' }, token: next });
      expect(r.status).toBe(200);
      expect((await f.call('PUT', '/env', { env: {} })).status).toBe(403);
      expect((await f.call('POST', '/terminals/commands', { command: 'true' })).status).toBe(403);
      const ok = await f.call(
        'POST',
        '/terminals/commands',
        { command: 'echo $OWNER_VALUE' },
        { token: next },
      );
      expect(ok.json.result.stdout.trim()).toBe('x');
    } finally {
      await f.close();
    }
  });

  it('refuses a short token and keeps the old one and the old env', async () => {
    const f = await startSidecarFixture();
    try {
      await f.call('PUT', '/env', { env: { KEEP: 'yes' } });
      const r = await f.call('PUT', '/env', { env: { OTHER: '1' }, token: 'short' });
      expect(r.status).toBe(400);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      const still = await f.call('POST', '/terminals/commands', { command: 'echo ${KEEP}${OTHER:-}' });
      expect(still.json.result.stdout.trim()).toBe('yes');
    } finally {
      await f.close();
    }
  });
});
