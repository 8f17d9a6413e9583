// Cross-cutting behaviour of the operator API: request ids, error shape, headers, CORS, limits,
// rate limiting, client IP trust, health/readiness/metrics/capabilities/provisions, OpenAPI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceHealth } from './deps.ts';
import { type Harness, startHarness } from './testing/harness.ts';
import { assertNoLeaks } from './testing/leaks.ts';

describe('operator API: cross-cutting', () => {
  let h: Harness;
  let owner: Awaited<ReturnType<Harness['newOwner']>>;
  let sbx: string;
  beforeAll(async () => {
    h = await startHarness({ config: { corsAllowedOrigins: ['https://app.example'], tls: true } });
    owner = await h.newOwner();
    sbx = h.addSandbox(owner.address).id;
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [owner.token]);
    await h.close();
  });

  describe('request id', () => {
    it('generates one, echoes it and puts it in the error body and the logs', async () => {
      const r = await h.call('GET', '/nope');
      const id = r.headers.get('x-request-id');
      expect(id).toMatch(/^req-[0-9a-f]{24}$/);
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ error: { code: 'NOT_FOUND', message: 'no route GET /nope', request_id: id } });
      expect(h.logLines.some((l) => l.includes(id!))).toBe(true);
    });

    it('accepts a well-formed id from the caller and forwards it to the sidecar', async () => {
      const id = 'client-trace-0001';
      const r = await h.call('POST', `/api/sandboxes/${sbx}/exec`, {
        token: owner.token,
        body: { command: 'echo hi' },
        headers: { 'x-request-id': id },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-request-id')).toBe(id);
      expect(h.sidecar.seen.at(-1)?.requestId).toBe(id);
    });

    it.each(['short', 'has spaces in it!', 'x'.repeat(200), 'inject\\nnewline'])(
      'replaces a malformed id (%s)',
      async (bad) => {
        const r = await h.call('GET', '/health', { headers: { 'x-request-id': bad } });
        expect(r.headers.get('x-request-id')).toMatch(/^req-/);
      },
    );
  });

  it('sets security headers on success and on errors, HSTS when TLS', async () => {
    for (const path of ['/health', '/nope', '/api/sandboxes']) {
      const r = await h.call('GET', path);
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    }
  });

  it('CORS: allows configured origins only', async () => {
    const ok = await fetch(`${h.url}/api/sandboxes`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const bad = await fetch(`${h.url}/api/sandboxes`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    expect(bad.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('malformed JSON → 400 VALIDATION; wrong shape → 400 naming the field', async () => {
    const bad = await h.call('POST', `/api/sandboxes/${sbx}/exec`, {
      token: owner.token,
      rawBody: '{"command": ',
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('VALIDATION');
    const shape = await h.call('POST', `/api/sandboxes/${sbx}/exec`, {
      token: owner.token,
      body: { command: 5 },
    });
    expect(shape.status).toBe(400);
    expect(shape.json.error.message).toMatch(/command/);
    const noType = await h.call('POST', `/api/sandboxes/${sbx}/exec`, {
      token: owner.token,
      rawBody: 'command=ls',
      headers: { 'content-type': 'text/plain' },
    });
    expect(noType.status).toBe(400);
  });

  it('oversize body → 413; a large secrets body is allowed', async () => {
    const big = await h.call('POST', `/api/sandboxes/${sbx}/exec`, {
      token: owner.token,
      body: { command: 'x'.repeat(1024 * 1024 + 10) },
    });
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe('PAYLOAD_TOO_LARGE');
    const env: Record<string, string> = {};
    for (let i = 0; i < 20; i++) env[`K${i}`] = 'v'.repeat(64 * 1024);
    const secrets = await h.call('POST', `/api/sandboxes/${sbx}/secrets`, {
      token: owner.token,
      body: { env },
    });
    expect(secrets.status).toBe(200);
  });

  it('health, readiness, metrics, capabilities, provisions', async () => {
    const health = await h.call('GET', '/health');
    expect(health.json).toEqual({ status: 'ok', checks: { runtime: 'ok', store: 'ok', chain: 'ok' } });
    expect((await h.call('GET', '/readyz')).json).toEqual({ status: 'ready' });
    const metrics = await h.call('GET', '/metrics');
    expect(metrics.text).toMatch(/operator_api_requests_total/);
    const caps = await h.call('GET', '/api/capabilities');
    expect(caps.json).toMatchObject({ mode: 'cloud', backends: ['docker'] });
    h.sandboxes.provisions.set('42', { phase: 'ready', updatedAt: 1, internalPath: '/var/lib/x' });
    expect((await h.call('GET', '/api/provisions/42')).json).toEqual({ phase: 'ready', updatedAt: 1 });
    expect((await h.call('GET', '/api/provisions/43')).status).toBe(404);
    expect((await h.call('GET', '/api/provisions/abc')).status).toBe(400);
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const doc = (await h.call('GET', '/api/openapi.json')).json;
    expect(doc.openapi).toBe('3.1.0');
    const exec = doc.paths['/api/sandboxes/{id}/exec'].post;
    expect(exec.parameters.some((p: { name: string }) => p.name === 'id')).toBe(true);
    expect(exec.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/ExecRequest');
    expect(doc.components.schemas.ExecRequest.required).toContain('command');
    expect(doc.components.schemas.SecretsRequest).toBeDefined();
    expect(doc.components.securitySchemes.bearer.scheme).toBe('bearer');
    for (const p of [
      '/api/auth/challenge',
      '/api/sandboxes',
      '/api/sandboxes/{id}/runs/{run_id}/events',
      '/health',
    ]) {
      expect(doc.paths[p], p).toBeDefined();
    }
  });
});

describe('operator API: degraded health', () => {
  it('answers 503 degraded when a check fails, and 503 not_ready before ready', async () => {
    const h = await startHarness({
      deps: {
        health: {
          runtime: () => true,
          store: () => true,
          chain: () => Promise.reject(new Error('rpc down: secret-url')),
        },
        ready: () => false,
      },
    });
    try {
      const r = await h.call('GET', '/health');
      expect(r.status).toBe(503);
      expect(r.json).toEqual({ status: 'degraded', checks: { runtime: 'ok', store: 'ok', chain: 'error' } });
      expect(r.text).not.toContain('secret-url');
      expect((await h.call('GET', '/readyz')).status).toBe(503);
    } finally {
      await h.close();
    }
  });
});

describe('operator API: instance health', () => {
  it('shows the instance keeper: degraded (503) with the reason while its provision fails, ok once ready', async () => {
    let instance: InstanceHealth = {
      state: 'failed',
      sandboxId: null,
      failures: 2,
      lastError: 'health check timed out',
      nextAttemptAt: 1_700_000_000_000,
      reportedOnChain: false,
    };
    const h = await startHarness({
      deps: {
        mode: 'instance',
        health: { runtime: () => true, store: () => true, chain: () => true },
        instance: () => instance,
      },
    });
    try {
      const failed = await h.call('GET', '/health');
      expect(failed.status).toBe(503);
      // Anonymous: the state, not the sandbox id or the error text (public.anonymous.test.ts).
      const { sandboxId: _id, lastError: _err, ...publicView } = instance;
      expect(failed.json).toEqual({
        status: 'degraded',
        checks: { runtime: 'ok', store: 'ok', chain: 'ok', instance: 'error' },
        instance: publicView,
      });
      instance = {
        ...instance,
        state: 'ready',
        sandboxId: 'sbx-1',
        failures: 0,
        lastError: null,
        nextAttemptAt: null,
      };
      const ok = await h.call('GET', '/health');
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({
        status: 'ok',
        checks: { instance: 'ok' },
        instance: { state: 'ready' },
      });
    } finally {
      await h.close();
    }
  });
});

describe('operator API: rate limits and client IP', () => {
  it('429 with retry-after once a class is exhausted; other classes unaffected', async () => {
    const h = await startHarness({ config: { rateLimits: { read: 5, auth: 3 } } });
    try {
      const owner = await h.newOwner(); // uses 2 auth requests
      for (let i = 0; i < 5; i++)
        expect((await h.call('GET', '/api/sandboxes', { token: owner.token })).status).toBe(200);
      const r = await h.call('GET', '/api/sandboxes', { token: owner.token });
      expect(r.status).toBe(429);
      expect(r.json.error.code).toBe('RATE_LIMITED');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.json.error.retry_after_ms).toBeGreaterThan(0);
      const body = { address: `0x${'11'.repeat(20)}` };
      expect((await h.call('POST', '/api/auth/challenge', { body })).status).toBe(200);
      expect((await h.call('POST', '/api/auth/challenge', { body })).status).toBe(429);
      expect((await h.call('GET', '/health')).status).toBe(200); // probes have their own class
    } finally {
      await h.close();
    }
  });

  it('X-Forwarded-For is ignored from untrusted peers and used from trusted proxies', async () => {
    const untrusted = await startHarness({ config: { rateLimits: { auth: 2 } } });
    try {
      for (const ip of ['1.1.1.1', '2.2.2.2']) {
        await untrusted.call('POST', '/api/auth/challenge', { headers: { 'x-forwarded-for': ip } });
      }
      const r = await untrusted.call('POST', '/api/auth/challenge', {
        headers: { 'x-forwarded-for': '3.3.3.3' },
      });
      expect(r.status).toBe(429); // all three counted against the real peer 127.0.0.1
    } finally {
      await untrusted.close();
    }
    const trusted = await startHarness({
      config: { rateLimits: { auth: 2 }, trustedProxies: ['127.0.0.1', '::1'] },
    });
    try {
      for (let i = 0; i < 2; i++) {
        await trusted.call('POST', '/api/auth/challenge', { headers: { 'x-forwarded-for': '198.51.100.1' } });
      }
      const same = await trusted.call('POST', '/api/auth/challenge', {
        headers: { 'x-forwarded-for': '198.51.100.1' },
      });
      expect(same.status).toBe(429);
      const other = await trusted.call('POST', '/api/auth/challenge', {
        headers: { 'x-forwarded-for': '198.51.100.2' },
        body: { address: `0x${'11'.repeat(20)}` },
      });
      expect(other.status).toBe(200);
    } finally {
      await trusted.close();
    }
  });

  it('IPv6 clients share one bucket per /64 (an address per request does not reset the limit)', async () => {
    const h = await startHarness({
      config: { rateLimits: { auth: 2 }, trustedProxies: ['127.0.0.1', '::1'] },
    });
    const from = (ip: string) =>
      h.call('POST', '/api/auth/challenge', {
        headers: { 'x-forwarded-for': ip },
        body: { address: `0x${'11'.repeat(20)}` },
      });
    try {
      expect((await from('2001:db8:1:2::1')).status).toBe(200);
      expect((await from('2001:0db8:0001:0002:ffff:0:0:9')).status).toBe(200);
      const third = await from('2001:db8:1:2:dead:beef:0:1');
      expect(third.status).toBe(429);
      expect((await from('[2001:db8:1:2::77]')).status).toBe(429);
      expect((await from('2001:db8:1:3::1')).status).toBe(200); // the next /64 is another client
    } finally {
      await h.close();
    }
  });

  it('OPTIONS requests are counted like the rest, with and without CORS', async () => {
    const plain = await startHarness({ config: { rateLimits: { read: 3 } } });
    try {
      for (let i = 0; i < 3; i++) await fetch(`${plain.url}/api/sandboxes`, { method: 'OPTIONS' });
      expect((await plain.call('GET', '/api/sandboxes')).status).toBe(429);
    } finally {
      await plain.close();
    }
    const cors = await startHarness({
      config: { rateLimits: { auth: 2 }, corsAllowedOrigins: ['https://app.example'] },
    });
    try {
      const preflight = () =>
        fetch(`${cors.url}/api/auth/challenge`, {
          method: 'OPTIONS',
          headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
        });
      expect((await preflight()).status).toBe(204);
      expect((await preflight()).status).toBe(204);
      expect((await preflight()).status).toBe(429);
      expect((await cors.call('POST', '/api/auth/challenge', { body: {} })).status).toBe(429);
    } finally {
      await cors.close();
    }
  });
});

describe('operator API: request timeout', () => {
  it('a request that outlives requestTimeoutMs → 504 REQUEST_TIMEOUT (streams are exempt)', async () => {
    const h = await startHarness({ config: { requestTimeoutMs: 300 } });
    try {
      const o = await h.newOwner();
      const id = h.addSandbox(o.address).id;
      h.sidecar.behaviour.hang = true;
      const r = await h.call('POST', `/api/sandboxes/${id}/exec`, {
        token: o.token,
        body: { command: 'sleep' },
      });
      expect(r.status).toBe(504);
      expect(r.json.error.code).toBe('REQUEST_TIMEOUT');
      h.sidecar.behaviour.hang = false;
      // An SSE stream lives past the timeout.
      h.sidecar.behaviour.parts = 10;
      h.sidecar.behaviour.eventDelayMs = 60;
      const p = await h.call('POST', `/api/sandboxes/${id}/prompt`, {
        token: o.token,
        body: { message: 'x' },
      });
      const { readSse } = await import('./testing/sse-reader.ts');
      const sse = await readSse(`${h.url}/api/sandboxes/${id}/runs/${p.json.run_id}/events`, {
        token: o.token,
      });
      expect(sse.events.at(-1)?.event).toBe('run.completed');
    } finally {
      await h.close();
    }
  });
});

describe('operator API: tee-instance mode', () => {
  it('serves the TEE routes for the instance sandbox and its owner only', async () => {
    let id = '';
    const seen: unknown[] = [];
    const h = await startHarness({
      mode: 'tee-instance',
      deps: {
        instanceSandboxId: () => id,
        tee: {
          attestation: (sbx, nonce) => ({ sandbox_id: sbx, nonce, quote: 'q' }),
          publicKey: (_sbx, nonce) => ({ public_key: 'pk', nonce }),
          sealedSecrets: (_sbx, body) => {
            seen.push(body);
            return { status: 'sealed_secrets_configured' };
          },
          channel: (_sbx, message) => {
            seen.push(Buffer.from(message).toString('hex'));
            return new Response(new Uint8Array([1, 2, 3]), {
              headers: { 'content-type': 'message/ohttp-chunked-res' },
            });
          },
        },
      },
    });
    try {
      const o = await h.newOwner();
      const other = await h.newOwner();
      id = h.addSandbox(o.address).id;
      const nonce = '0011223344556677'.repeat(4);
      const att = await h.call('GET', `/api/sandbox/tee/attestation?nonce=${nonce}`, { token: o.token });
      expect(att.json).toEqual({ sandbox_id: id, nonce, quote: 'q' });
      expect(
        (await h.call('GET', `/api/sandbox/tee/public-key?nonce=${nonce}`, { token: o.token })).json,
      ).toEqual({
        public_key: 'pk',
        nonce,
      });
      const body = { v: 1, algorithm: 'a', key_id: 'k', enc: 'e', ciphertext: 'abcd' };
      const sealed = await h.call('POST', '/api/sandbox/tee/sealed-secrets', { token: o.token, body });
      expect(sealed.json.status).toBe('sealed_secrets_configured');
      // The owner channel: opaque bytes relayed both ways, untouched.
      const relayed = await fetch(`${h.url}/api/sandbox/tee/channel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.token}`, 'content-type': 'message/ohttp-req' },
        body: Buffer.from([9, 8, 7]),
      });
      expect([relayed.status, relayed.headers.get('content-type')]).toEqual([
        200,
        'message/ohttp-chunked-res',
      ]);
      expect([...new Uint8Array(await relayed.arrayBuffer())]).toEqual([1, 2, 3]);
      expect(seen.at(-1)).toBe('090807');
      for (const q of ['?nonce=zz', '?nonce=00112233445566778899', '']) {
        expect((await h.call('GET', `/api/sandbox/tee/attestation${q}`, { token: o.token })).status).toBe(
          400,
        );
      }
      expect(
        (await h.call('GET', `/api/sandbox/tee/public-key?nonce=${nonce}`, { token: other.token })).status,
      ).toBe(403);
      expect(
        (
          await h.call('POST', '/api/sandbox/tee/sealed-secrets', {
            token: other.token,
            body,
          })
        ).status,
      ).toBe(403);
      expect(seen).toEqual([body, '090807']);
    } finally {
      await h.close();
    }
  });
});
