// The `phala` backend: each sandbox is a dstack CVM on Phala Cloud, deployed through the REST
// client; inside, the sandbox's sidecar holds the X25519 sealing key and gets fresh quotes from
// the dstack agent (sidecar/src/tee). The operator waits for the CVM and its sidecar, then only
// forwards: evidence and sealed bodies pass untouched, so it can neither open a secret nor swap
// the key without every client's binding check failing. Deployments live in memory (restart →
// a new CVM; the old one is listed in the Phala dashboard).
import { randomBytes } from 'node:crypto';
import { getCollateral } from '@phala/dcap-qvl';
import { RuntimeError } from '../../errors.ts';
import type { SandboxTeeBackend, TeeDeployment, TeeDeployParams } from '../backend.ts';
import type { PhalaCloudApi } from './cloud-api.ts';

export interface PhalaBackendOptions {
  api: PhalaCloudApi;
  /** The sandbox image the CVM pulls, pinned by digest (PHALA_SANDBOX_IMAGE). */
  image: string;
  sidecarPort?: number;
  /** How often to ask for the CVM state and the sidecar's health while it boots. */
  pollMs?: number;
  /** Give up on a CVM that is not running with a healthy sidecar after this long. */
  readyTimeoutMs?: number;
  fetch?: typeof fetch;
  /** TEE_PCCS_URL, for the collateral served beside each quote. */
  pccsUrl?: string;
}

interface Deployed {
  deploymentId: string;
  url: string;
  token: string;
}

const RUNNING = new Set(['running']);
const FAILED = new Set(['failed', 'error', 'stopped', 'exited']);

export class PhalaTeeBackend implements SandboxTeeBackend {
  readonly name = 'phala';
  readonly keyHolder = 'sandbox';
  readonly #deployed = new Map<string, Deployed>();
  constructor(private readonly o: PhalaBackendOptions) {
    if (!/@sha256:[0-9a-f]{64}$/.test(o.image)) {
      throw new RuntimeError(
        'CONFIG_INVALID',
        'PHALA_SANDBOX_IMAGE must be pinned by digest (name@sha256:<64 hex>): a tag can change under the measurement',
      );
    }
  }
  teeType() {
    return 'tdx' as const;
  }
  supportsAttestationReportData() {
    return true;
  }
  async check(): Promise<void> {
    // The API key and endpoint are proven by the first deploy; nothing local to check.
  }

  async deploy(p: TeeDeployParams): Promise<TeeDeployment> {
    const token = randomBytes(32).toString('hex');
    const port = this.o.sidecarPort ?? 8080;
    const d = await this.o.api.deploy({
      name: `sandbox-${p.sandboxId}`.slice(0, 63),
      image: this.o.image,
      vcpu: p.cpuCores,
      memoryMb: p.memoryMb,
      diskGb: p.diskGb,
      httpPort: port,
      // Platform env only, encrypted to the CVM; the sidecar refuses to boot on anything that
      // would decide what runs (sidecar/src/tee/context.ts).
      env: {
        SIDECAR_AUTH_TOKEN: token,
        SIDECAR_PORT: String(port),
        SIDECAR_TEE: 'dstack',
        SIDECAR_TEE_CONTEXT: p.ctx,
      },
    });
    const url = await this.#waitReady(d.id);
    const entry = { deploymentId: d.id, url, token };
    this.#deployed.set(p.sandboxId, entry);
    // The create env is not delivered: in the CVM only the owner sets env (through the owner
    // channel); an operator-delivered env could point the agent elsewhere (OPENAI_BASE_URL …).
    return { sandboxId: p.sandboxId, deploymentId: d.id, sidecarUrl: url };
  }

  async #waitReady(id: string): Promise<string> {
    const deadline = Date.now() + (this.o.readyTimeoutMs ?? 15 * 60_000);
    const pause = () => new Promise((r) => setTimeout(r, this.o.pollMs ?? 5_000));
    let status = '';
    for (;;) {
      status = String((await this.o.api.state(id)).status ?? '');
      if (RUNNING.has(status)) break;
      if (FAILED.has(status)) {
        throw new RuntimeError(
          'SIDECAR_ERROR',
          `the Phala CVM ${id} is ${status}; see its logs on Phala Cloud`,
        );
      }
      if (Date.now() > deadline) break;
      await pause();
    }
    const { appUrl } = await this.o.api.network(id);
    if (!RUNNING.has(status) || !appUrl) {
      throw new RuntimeError(
        'SIDECAR_TIMEOUT',
        `the Phala CVM ${id} is not running with a public URL in time (state ${status || 'unknown'})`,
      );
    }
    const url = appUrl.replace(/\/+$/, '');
    while (!(await this.#healthy(url))) {
      if (Date.now() > deadline) {
        throw new RuntimeError(
          'SIDECAR_TIMEOUT',
          `the sidecar of Phala CVM ${id} did not answer /health in time`,
        );
      }
      await pause();
    }
    return url;
  }

  async #healthy(url: string): Promise<boolean> {
    try {
      const r = await (this.o.fetch ?? fetch)(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
      await r.body?.cancel();
      return r.ok;
    } catch {
      return false;
    }
  }

  #entry(sandboxId: string): Deployed {
    const e = this.#deployed.get(sandboxId);
    if (!e) throw new RuntimeError('NOT_FOUND', `sandbox ${sandboxId} has no Phala CVM on this operator`);
    return e;
  }

  async #sidecar(
    e: Deployed,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await (this.o.fetch ?? fetch)(`${e.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${e.token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
    } catch (err) {
      throw new RuntimeError(
        'SIDECAR_ERROR',
        `the CVM's sidecar is unreachable (${method} ${path.split('?')[0]})`,
        {
          cause: err,
        },
      );
    }
    const text = await res.text();
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new RuntimeError('SIDECAR_ERROR', `the CVM's sidecar answered ${res.status} without JSON`);
    }
    if (!res.ok) {
      const err = (json.error ?? {}) as { code?: string; message?: string };
      const code = res.status === 400 ? 'VALIDATION' : 'SIDECAR_ERROR';
      throw new RuntimeError(
        code,
        `the CVM's sidecar refused: ${String(err.message ?? res.status).slice(0, 300)}`,
      );
    }
    return json;
  }

  /** Where the operator reaches the CVM's sidecar, with its token (for the API's sidecar client). */
  endpoint(sandboxId: string): { url: string; token: string } {
    const e = this.#entry(sandboxId);
    return { url: e.url, token: e.token };
  }

  async forwardEvidence(sandboxId: string, what: 'attestation' | 'public-key', nonceHex: string) {
    const r = await this.#sidecar(
      this.#entry(sandboxId),
      'GET',
      `/tee/${what}?nonce=${encodeURIComponent(nonceHex)}`,
    );
    // Collateral (~16 KB, Intel PCS) goes beside the quote, as with direct; the quote is untouched.
    if (r.collateral === undefined && typeof r.evidence === 'string' && this.o.pccsUrl) {
      const c = await getCollateral(this.o.pccsUrl, Buffer.from(r.evidence, 'hex')).catch(() => undefined);
      if (c) return { ...r, collateral: c };
    }
    return r;
  }
  async forwardChannel(sandboxId: string, message: Uint8Array): Promise<Response> {
    const e = this.#entry(sandboxId);
    try {
      return await (this.o.fetch ?? fetch)(`${e.url}/tee/channel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${e.token}`, 'content-type': 'message/ohttp-req' },
        body: Buffer.from(message),
      });
    } catch (err) {
      throw new RuntimeError('SIDECAR_ERROR', "the CVM's sidecar is unreachable (POST /tee/channel)", {
        cause: err,
      });
    }
  }
  async stop(sandboxId: string): Promise<void> {
    await this.o.api.stop(this.#entry(sandboxId).deploymentId);
  }
  async destroy(sandboxId: string): Promise<void> {
    await this.o.api.destroy(this.#entry(sandboxId).deploymentId);
    this.#deployed.delete(sandboxId);
  }
}
