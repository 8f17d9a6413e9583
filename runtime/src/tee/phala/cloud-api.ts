// Phala Cloud REST client (header x-api-key) for the `phala` backend's deployment half: a
// one-service compose (`sidecar`, with /var/run/dstack.sock mounted at /run/tee/dstack.sock) created as a dstack CVM,
// its env encrypted to the CVM's env key; state, network, stored attestation, start, shutdown,
// delete. Endpoints per spec tee.md §2; exact body fields follow the reference, not a live API.
import { RuntimeError } from '../../errors.ts';
import { encryptEnvForCvm } from './env-encryption.ts';

export const DEFAULT_PHALA_ENDPOINT = 'https://cloud-api.phala.network/api/v1';

export interface PhalaCvmSpec {
  name: string;
  image: string;
  vcpu: number;
  memoryMb: number;
  diskGb: number;
  httpPort: number;
  /** Secret and non-secret env alike: they travel only encrypted to the CVM's key. */
  env: Record<string, string>;
}

export interface PhalaDeployment {
  id: string;
  appId: string | undefined;
}

export class PhalaCloudApi {
  constructor(
    private readonly o: { apiKey: string; endpoint?: string; fetch?: typeof fetch; timeoutMs?: number },
  ) {
    if (!o.apiKey) throw new RuntimeError('CONFIG_INVALID', 'TEE_BACKEND=phala needs PHALA_API_KEY');
  }

  async #call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const url = `${(this.o.endpoint ?? DEFAULT_PHALA_ENDPOINT).replace(/\/+$/, '')}${path}`;
    let res: Response;
    try {
      res = await (this.o.fetch ?? fetch)(url, {
        method,
        headers: {
          'x-api-key': this.o.apiKey,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 30_000),
      });
    } catch (e) {
      throw new RuntimeError('SIDECAR_ERROR', `Phala Cloud API unreachable (${method} ${path})`, {
        cause: e,
      });
    }
    const text = await res.text();
    if (!res.ok) {
      // The API's text is not echoed to users (it may name account details); the status is enough.
      throw new RuntimeError('SIDECAR_ERROR', `Phala Cloud API ${method} ${path} answered ${res.status}`, {
        details: { status: res.status },
      });
    }
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }

  static compose(spec: PhalaCvmSpec): string {
    const env = Object.keys(spec.env)
      .sort()
      .map((k) => `      - ${k}=\${${k}}`)
      .join('\n');
    return [
      'services:',
      '  sidecar:',
      `    image: ${spec.image}`,
      '    restart: always',
      '    volumes:',
      // Into the image's root-only /run/tee: the agent user cannot reach the quote/key socket.
      '      - /var/run/dstack.sock:/run/tee/dstack.sock',
      '    ports:',
      `      - "${spec.httpPort}:${spec.httpPort}"`,
      ...(env ? ['    environment:', env] : []),
      '',
    ].join('\n');
  }

  async deploy(spec: PhalaCvmSpec): Promise<PhalaDeployment> {
    const vm = {
      name: spec.name,
      vcpu: spec.vcpu,
      memory: spec.memoryMb,
      disk_size: spec.diskGb,
      compose_manifest: {
        name: spec.name,
        docker_compose_file: PhalaCloudApi.compose(spec),
        kms_enabled: true,
      },
      listed: false,
    };
    const key = await this.#call('POST', '/cvms/pubkey/from_cvm_configuration', vm);
    const pubkey = key.app_env_encrypt_pubkey;
    if (typeof pubkey !== 'string') {
      throw new RuntimeError('SIDECAR_ERROR', 'Phala Cloud gave no app_env_encrypt_pubkey for the CVM');
    }
    const created = await this.#call('POST', '/cvms/from_cvm_configuration', {
      ...vm,
      encrypted_env: encryptEnvForCvm(spec.env, pubkey),
      app_env_encrypt_pubkey: pubkey,
      app_id_salt: key.app_id_salt,
    });
    const id = created.id ?? created.app_id;
    if (id === undefined) throw new RuntimeError('SIDECAR_ERROR', 'Phala Cloud created a CVM without an id');
    return { id: String(id), appId: typeof created.app_id === 'string' ? created.app_id : undefined };
  }

  state(id: string) {
    return this.#call('GET', `/cvms/${encodeURIComponent(id)}/state`);
  }
  async network(id: string): Promise<{ appUrl: string | undefined; internalIp: string | undefined }> {
    const n = await this.#call('GET', `/cvms/${encodeURIComponent(id)}/network`);
    const urls = n.public_urls as Array<{ app?: string }> | { app?: string } | undefined;
    const app = Array.isArray(urls) ? urls[0]?.app : urls?.app;
    return { appUrl: app, internalIp: typeof n.internal_ip === 'string' ? n.internal_ip : undefined };
  }
  /** The API's stored quote: NOT bound to any nonce of ours (the sidecar's dstack quotes are). */
  storedAttestation(id: string) {
    return this.#call('GET', `/cvms/${encodeURIComponent(id)}/attestation`);
  }
  start(id: string) {
    return this.#call('POST', `/cvms/${encodeURIComponent(id)}/start`);
  }
  stop(id: string) {
    return this.#call('POST', `/cvms/${encodeURIComponent(id)}/shutdown`);
  }
  destroy(id: string) {
    return this.#call('DELETE', `/cvms/${encodeURIComponent(id)}`);
  }
}
