// Our own client of the dstack guest agent (HTTP/1.1 over /var/run/dstack.sock; every call a
// POST with a JSON body), used by the sidecar inside a Phala CVM for fresh, nonce-bound quotes.
// Not the @phala/dstack-sdk: its @noble peers conflict with ours (spec tee.md §2).
import { request } from 'node:http';
import { SidecarError } from '../errors.ts';

const fail = (message: string) => new SidecarError('TEE_UNAVAILABLE', message, 503);

/** Where the compose mounts it: the image's root-only /run/tee (the agent user cannot reach it). */
export const DSTACK_SOCKET = '/run/tee/dstack.sock';

export interface DstackQuote {
  quote: Uint8Array;
  /** The RTMR event log, the agent's JSON string as it came (a verifier replays it to RTMR3). */
  eventLog: string;
  reportData: Uint8Array;
  vmConfig: string;
}

export interface DstackInfo {
  app_id: string;
  instance_id: string;
  compose_hash?: string;
  tcb_info: Record<string, unknown>;
  [key: string]: unknown;
}

export class DstackClient {
  constructor(
    private readonly socketPath = DSTACK_SOCKET,
    private readonly timeoutMs = 15_000,
  ) {}

  post(path: string, body: unknown): Promise<unknown> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          path,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if ((res.statusCode ?? 500) >= 300) {
              reject(fail(`dstack ${path} answered ${res.statusCode}`));
              return;
            }
            try {
              resolve(JSON.parse(text));
            } catch {
              reject(fail(`dstack ${path} did not answer JSON`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(fail(`dstack ${path} timed out`)));
      req.on('error', (e) =>
        reject(
          e instanceof SidecarError
            ? e
            : fail(
                `cannot reach the dstack agent at ${this.socketPath} (${(e as NodeJS.ErrnoException).code ?? e.message}); is this a dstack CVM with the socket mounted?`,
              ),
        ),
      );
      req.end(payload);
    });
  }

  /** A fresh quote whose report_data is exactly these 64 bytes (checked in the answer). */
  async getQuote(reportData: Uint8Array): Promise<DstackQuote> {
    if (reportData.length !== 64) throw fail('dstack report_data must be 64 bytes');
    const hex = Buffer.from(reportData).toString('hex');
    const r = (await this.post('/GetQuote', { report_data: hex })) as Record<string, unknown>;
    if (typeof r.quote !== 'string' || typeof r.report_data !== 'string') {
      throw fail('dstack /GetQuote answered without quote or report_data');
    }
    const quote = new Uint8Array(Buffer.from(r.quote, 'hex'));
    const signed = Buffer.from(quote.subarray(48 + 520, 48 + 520 + 64)).toString('hex');
    if (r.report_data.slice(0, 128) !== hex || signed !== hex) {
      throw fail('the dstack quote does not carry the report_data we asked for');
    }
    const eventLog = typeof r.event_log === 'string' ? r.event_log : '';
    return { quote, eventLog, reportData, vmConfig: typeof r.vm_config === 'string' ? r.vm_config : '' };
  }

  async info(): Promise<DstackInfo> {
    const r = (await this.post('/Info', {})) as Record<string, unknown>;
    const tcb = typeof r.tcb_info === 'string' ? (JSON.parse(r.tcb_info) as Record<string, unknown>) : {};
    return { ...(r as DstackInfo), tcb_info: tcb };
  }
}
