// The Phala Cloud REST client against a local fake of the API (an HTTP server here). The dstack
// socket client is tested with the sidecar that uses it (sidecar/src/tee). No real CVM or Phala
// account was reached.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PhalaCloudApi } from './cloud-api.ts';
import { decryptEnvForCvm } from './env-encryption.ts';

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
    expect(compose).toContain('/var/run/dstack.sock:/run/tee/dstack.sock');
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
