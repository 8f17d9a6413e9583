// Test support: a local Phala Cloud REST API (the endpoints and body fields the phala backend
// uses, spec tee.md §2) whose "CVM" is a real sidecar process: on create it decrypts the env the
// operator encrypted to the CVM key (as Phala's KMS would) and boots the sidecar with it and a
// dstack agent socket. No real CVM or Phala account is involved.
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { ownerChannel, type SidecarFixture, startSidecarFixture } from '@agent-sandbox/sidecar/testing';
import type { LocalAccount } from 'viem';
import { decryptEnvForCvm } from '../phala/env-encryption.ts';
import { startWiretap, type Wiretap } from './wiretap.ts';

export const FAKE_PHALA_API_KEY = 'phala-test-key';

export interface FakePhala {
  endpoint: string;
  calls: Array<{ method: string; url: string; body: string }>;
  /** The booted CVM's sidecar and the token the operator gave it (decrypted). */
  cvm(): { sidecar: SidecarFixture; token: string; id: string } | undefined;
  /** Runs a command in the CVM's sandbox as the agent (exec), ordered by `owner` over the channel. */
  inCvm(command: string, owner: LocalAccount): Promise<{ stdout: string; status: number }>;
  /** The CVM's public URL (…/network): a wiretap in front of its sidecar. */
  cvmUrl(): string | undefined;
  /** Every byte between the operator and the CVM's sidecar (through cvmUrl). */
  cvmWire(): Buffer;
  /** How many GET …/state calls answered before `running`. */
  statePolls: number;
  close(): Promise<void>;
}

export async function startFakePhala(o: { dstackSocket: string; bootPolls?: number }): Promise<FakePhala> {
  const cvmKey = generateKeyPairSync('x25519');
  const cvmPub = Buffer.from(cvmKey.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
  let cvm: { sidecar: SidecarFixture; token: string; id: string } | undefined;
  let tap: Wiretap | undefined;
  let next = 76;
  const fake: FakePhala = {
    endpoint: '',
    calls: [],
    cvm: () => cvm,
    cvmUrl: () => tap?.url,
    cvmWire: () => tap?.bytes() ?? Buffer.alloc(0),
    statePolls: 0,
    async inCvm(command, owner) {
      const c = cvm!;
      const pk = await c.sidecar.call('GET', `/tee/public-key?nonce=${'00'.repeat(32)}`, undefined, {
        token: c.token,
      });
      const ch = ownerChannel({
        url: c.sidecar.sidecar.url,
        operatorToken: c.token,
        pubkeyHex: pk.json.pubkey,
        ctx: pk.json.binding.ctx,
        owner,
      });
      const r = await ch.client.json('POST', '/terminals/commands', { command });
      const j = r.json as { result?: { stdout?: string } } | undefined;
      return { stdout: String(j?.result?.stdout ?? ''), status: r.status };
    },
    close: async () => {},
  };
  const api: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', async () => {
      fake.calls.push({ method: req.method!, url: req.url!, body: text });
      const send = (v: unknown, status = 200) => res.writeHead(status).end(JSON.stringify(v));
      if (req.headers['x-api-key'] !== FAKE_PHALA_API_KEY) return send({ detail: 'invalid api key' }, 401);
      const u = req.url!;
      if (req.method === 'POST' && u.endsWith('/cvms/pubkey/from_cvm_configuration'))
        return send({ app_env_encrypt_pubkey: cvmPub, app_id_salt: 'salt' });
      if (req.method === 'POST' && u.endsWith('/cvms/from_cvm_configuration')) {
        const b = JSON.parse(text) as {
          encrypted_env: string;
          compose_manifest: { docker_compose_file: string };
        };
        if (!b.compose_manifest.docker_compose_file.includes('/var/run/dstack.sock:/run/tee/dstack.sock'))
          return send({ detail: 'compose must mount the dstack socket' }, 422);
        const env = decryptEnvForCvm(b.encrypted_env, cvmKey.privateKey);
        const id = String(++next);
        const sidecar = await startSidecarFixture({
          ...env,
          SIDECAR_PORT: '0',
          SIDECAR_DSTACK_SOCKET: o.dstackSocket,
        });
        cvm = { sidecar, token: env.SIDECAR_AUTH_TOKEN ?? '', id };
        tap = await startWiretap(sidecar.sidecar.url);
        return send({ id: Number(id), app_id: `app${id}` });
      }
      const m = /\/cvms\/(\d+)(\/\w+)?$/.exec(u);
      const booted = cvm;
      if (!m || !booted || m[1] !== booted.id) return send({ detail: 'no such CVM' }, 404);
      if (m[2] === '/state')
        return send({ status: ++fake.statePolls < (o.bootPolls ?? 3) ? 'starting' : 'running' });
      if (m[2] === '/network') return send({ public_urls: [{ app: tap!.url }], internal_ip: '10.0.0.7' });
      if (req.method === 'DELETE' && !m[2]) return send({});
      if (req.method === 'POST' && m[2] === '/shutdown') return send({});
      return send({ detail: 'not faked' }, 404);
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  fake.endpoint = `http://127.0.0.1:${(api.address() as { port: number }).port}/api/v1`;
  fake.close = async () => {
    await tap?.close();
    await cvm?.sidecar.close();
    await new Promise((r) => api.close(r));
  };
  return fake;
}
