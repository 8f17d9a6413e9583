// The phala building blocks against local fakes: the Phala Cloud REST API (an HTTP server here)
// and the dstack guest agent (unix-socket HTTP, answering with the real sample /GetQuote shape).
// No real CVM or Phala account was reached.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PhalaCloudApi } from './cloud-api.ts';
import { DstackClient } from './dstack-client.ts';
import { decryptEnvForCvm } from './env-encryption.ts';

const sample = JSON.parse(
  readFileSync(
    new URL('../../../../attestation/testdata/tdx/dstack_getquote_response.json', import.meta.url),
    'utf8',
  ),
) as { quote: string; event_log: string; report_data: string; vm_config: string };

const body = (req: IncomingMessage) =>
  new Promise<string>((res) => {
    let s = '';
    req.on('data', (c) => (s += c));
    req.on('end', () => res(s));
  });
const listen = (srv: Server, where: number | string) =>
  new Promise<void>((res) =>
    typeof where === 'string' ? srv.listen(where, res) : srv.listen(where, '127.0.0.1', res),
  );

let dir: string;
const servers: Server[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'phala-'));
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  await rm(dir, { recursive: true, force: true });
});

describe('dstack guest agent client (fake socket, real sample shape)', () => {
  it('asks /GetQuote for our 64 bytes and refuses a quote carrying other report_data', async () => {
    const sock = join(dir, 'dstack.sock');
    const seen: Array<{ path: string; body: unknown }> = [];
    let honest = true;
    const srv = createServer(async (req, res) => {
      const b = JSON.parse((await body(req)) || '{}') as { report_data?: string };
      seen.push({ path: req.url ?? '', body: b });
      if (req.url === '/GetQuote') {
        // Like dstack's simulator: the sample quote with report_data patched in (its signature is
        // then invalid; only the wire shape is under test here).
        const q = Buffer.from(sample.quote, 'hex');
        if (honest) Buffer.from(b.report_data!, 'hex').copy(q, 568);
        res.end(JSON.stringify({ ...sample, quote: q.toString('hex'), report_data: b.report_data }));
      } else if (req.url === '/Info') {
        res.end(
          JSON.stringify({ app_id: 'app', instance_id: 'i', tcb_info: JSON.stringify({ mrtd: 'ab' }) }),
        );
      } else res.writeHead(404).end();
    });
    servers.push(srv);
    await listen(srv, sock);
    const client = new DstackClient(sock);
    const rd = new Uint8Array(randomBytes(64));
    const q = await client.getQuote(rd);
    expect(seen[0]).toEqual({ path: '/GetQuote', body: { report_data: Buffer.from(rd).toString('hex') } });
    expect(q.quote.length).toBe(Buffer.from(sample.quote, 'hex').length);
    expect(Array.isArray(q.eventLog) && q.eventLog.length).toBeGreaterThan(0);
    expect((await client.info()).tcb_info).toEqual({ mrtd: 'ab' });
    honest = false;
    await expect(client.getQuote(rd)).rejects.toThrow(/does not carry the report_data/);
    await expect(new DstackClient(join(dir, 'none.sock')).getQuote(rd)).rejects.toThrow(
      /is this a dstack CVM/,
    );
  });
});

describe('Phala Cloud REST client (fake API)', () => {
  it('deploys a one-service compose with env encrypted to the CVM key, then manages it', async () => {
    const cvmKey = generateKeyPairSync('x25519');
    const cvmPub = Buffer.from(cvmKey.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
    const calls: Array<{
      method: string;
      url: string;
      key: string | undefined;
      body: Record<string, unknown>;
    }> = [];
    const srv = createServer(async (req, res) => {
      const text = await body(req);
      calls.push({
        method: req.method!,
        url: req.url!,
        key: req.headers['x-api-key'] as string | undefined,
        body: text ? JSON.parse(text) : {},
      });
      if (req.headers['x-api-key'] !== 'k-test') return res.writeHead(401).end('{"detail":"bad key"}');
      const u = req.url!;
      if (u.endsWith('/cvms/pubkey/from_cvm_configuration'))
        return res.end(JSON.stringify({ app_env_encrypt_pubkey: cvmPub, app_id_salt: 'salt1' }));
      if (u.endsWith('/cvms/from_cvm_configuration'))
        return res.end(JSON.stringify({ id: 42, app_id: 'app42' }));
      if (u.endsWith('/network'))
        return res.end(
          JSON.stringify({ public_urls: [{ app: 'https://app42.example' }], internal_ip: '10.0.0.2' }),
        );
      if (u.endsWith('/state')) return res.end(JSON.stringify({ status: 'running' }));
      return res.end('{}');
    });
    servers.push(srv);
    await listen(srv, 0);
    const endpoint = `http://127.0.0.1:${(srv.address() as { port: number }).port}/api/v1`;
    const api = new PhalaCloudApi({ apiKey: 'k-test', endpoint });
    const spec = {
      name: 'sbx-1',
      image: 'sandbox@sha256:ab',
      vcpu: 2,
      memoryMb: 2048,
      diskGb: 10,
      httpPort: 8080,
      env: { SIDECAR_AUTH_TOKEN: 'tok-secret', MODE: 'x' },
    };
    const d = await api.deploy(spec);
    expect(d).toEqual({ id: '42', appId: 'app42' });
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST /api/v1/cvms/pubkey/from_cvm_configuration',
      'POST /api/v1/cvms/from_cvm_configuration',
    ]);
    const create = calls[1]!.body;
    expect(JSON.stringify(calls)).not.toContain('tok-secret'); // only ciphertext leaves
    expect(create.app_id_salt).toBe('salt1');
    expect(decryptEnvForCvm(create.encrypted_env as string, cvmKey.privateKey)).toEqual(spec.env);
    const compose = (create.compose_manifest as { docker_compose_file: string }).docker_compose_file;
    expect(compose).toContain('/var/run/dstack.sock:/var/run/dstack.sock');
    expect(compose).toContain(`SIDECAR_AUTH_TOKEN=\${SIDECAR_AUTH_TOKEN}`);
    expect(await api.network('42')).toEqual({ appUrl: 'https://app42.example', internalIp: '10.0.0.2' });
    await api.stop('42');
    await api.destroy('42');
    expect(calls.slice(-2).map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST /api/v1/cvms/42/shutdown',
      'DELETE /api/v1/cvms/42',
    ]);
    await expect(new PhalaCloudApi({ apiKey: 'wrong', endpoint }).state('42')).rejects.toThrow(
      /answered 401/,
    );
    expect(() => new PhalaCloudApi({ apiKey: '' })).toThrow(/PHALA_API_KEY/);
  });
});
