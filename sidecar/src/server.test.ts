// The HTTP surface as a whole: health, auth (401/403), one error shape, malformed JSON, request ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SidecarFixture, startSidecarFixture } from './testing/sidecar-fixture.ts';

let fx: SidecarFixture;
beforeAll(async () => {
  fx = await startSidecarFixture({ SIDECAR_MAX_BODY_BYTES: '4096' });
});
afterAll(() => fx.close());

describe('sidecar server', () => {
  it('answers /health without a token', async () => {
    const r = await fx.call('GET', '/health', undefined, { token: null });
    expect(r.status).toBe(200);
    expect(r.json.status).toBe('ok');
    expect(typeof r.json.timestamp).toBe('string');
  });

  it('refuses a missing token with 401 and a wrong one with 403, in the error shape', async () => {
    const missing = await fx.call('GET', '/agents', undefined, { token: null });
    expect(missing.status).toBe(401);
    expect(missing.json).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    const wrong = await fx.call('GET', '/agents', undefined, { token: 'f'.repeat(64) });
    expect(wrong.status).toBe(403);
    expect(wrong.json).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
    const short = await fx.call('GET', '/agents', undefined, { token: 'x' });
    expect(short.status).toBe(403);
  });

  it('accepts ?token= only on SSE routes', async () => {
    const res = await fetch(`${fx.sidecar.url}/agents?token=${fx.token}`);
    expect(res.status).toBe(401);
    const bad = await fetch(`${fx.sidecar.url}/terminals/nope/stream?token=wrong`);
    expect(bad.status).toBe(403);
    const ok = await fetch(`${fx.sidecar.url}/terminals/nope/stream?token=${fx.token}`);
    expect(ok.status).toBe(404);
  });

  it('answers malformed JSON with 400 INVALID_JSON and keeps serving', async () => {
    const r = await fx.call('POST', '/terminals/commands', undefined, { raw: '{"command": "echo' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_JSON');
    const again = await fx.call('GET', '/health');
    expect(again.status).toBe(200);
  });

  it('answers a JSON body that is not an object with 400', async () => {
    const r = await fx.call('POST', '/files/read', undefined, { raw: '[1,2]' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('INVALID_REQUEST');
  });

  it('refuses bodies over the limit with 413', async () => {
    const r = await fx.call('POST', '/files/write', { path: 'big.txt', content: 'x'.repeat(10_000) });
    expect(r.status).toBe(413);
    expect(r.json.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers unknown routes with 404 and wrong methods with 405', async () => {
    expect((await fx.call('GET', '/nope')).status).toBe(404);
    const r = await fx.call('PUT', '/files/read', {});
    expect(r.status).toBe(405);
    expect(r.json.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('echoes a forwarded x-request-id and makes one up otherwise', async () => {
    const res = await fetch(`${fx.sidecar.url}/health`, { headers: { 'x-request-id': 'req-123' } });
    expect(res.headers.get('x-request-id')).toBe('req-123');
    const gen = await fetch(`${fx.sidecar.url}/agents`, {
      headers: { 'x-request-id': 'bad id with spaces', authorization: `Bearer ${fx.token}` },
    });
    expect(gen.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const authed = await fetch(`${fx.sidecar.url}/agents`, {
      headers: { 'x-request-id': 'req-456', authorization: `Bearer ${fx.token}` },
    });
    expect(authed.headers.get('x-request-id')).toBe('req-456');
  });
});
