// Test support: a dstack guest agent on a unix socket (HTTP/1.1, POST + JSON, as the real one at
// /var/run/dstack.sock), answering /GetQuote in the shape of the real sample response
// (attestation/testdata/tdx/dstack_getquote_response.json) with the caller's report_data patched
// into the sample quote at offset 568 — exactly what dstack's own simulator does, so the quote's
// signature no longer verifies: it tests the wire and the binding, not Intel's signature. With
// `quote` (a test TDX PKI's signer) its quotes verify under that test root.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

export interface DstackSample {
  quote: string;
  event_log: string;
  report_data: string;
  vm_config: string;
}

export const DSTACK_SAMPLE: DstackSample = JSON.parse(
  readFileSync(
    new URL('../../../attestation/testdata/tdx/dstack_getquote_response.json', import.meta.url),
    'utf8',
  ),
);

export interface FakeDstack {
  socketPath: string;
  /** Every call, in order: path and JSON body. */
  calls: Array<{ path: string; body: Record<string, unknown> }>;
  /** When false, /GetQuote answers the sample quote unpatched (a lying agent). */
  honest: boolean;
  close(): Promise<void>;
}

export interface FakeDstackOptions {
  /** Makes the quote over a report_data (e.g. a test TDX PKI's signTdxQuote, which then verifies). */
  quote?: (reportData: Uint8Array) => Uint8Array;
}

export async function startFakeDstack(socketPath: string, o: FakeDstackOptions = {}): Promise<FakeDstack> {
  const fake: FakeDstack = { socketPath, calls: [], honest: true, close: async () => {} };
  const srv: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      fake.calls.push({ path: req.url ?? '', body });
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (req.url === '/GetQuote') {
        const rd = String(body.report_data ?? '');
        if (!/^[0-9a-f]{0,128}$/.test(rd)) return void res.writeHead(400).end('bad report_data');
        let q = Buffer.from(DSTACK_SAMPLE.quote, 'hex');
        const want = Buffer.from(rd.padEnd(128, '0'), 'hex');
        if (fake.honest && o.quote) q = Buffer.from(o.quote(new Uint8Array(want)));
        else if (fake.honest) want.copy(q, 568);
        res.setHeader('content-type', 'application/json');
        return void res.end(
          JSON.stringify({ ...DSTACK_SAMPLE, quote: q.toString('hex'), report_data: rd.padEnd(128, '0') }),
        );
      }
      if (req.url === '/Info') {
        return void res.end(
          JSON.stringify({ app_id: 'fake', instance_id: 'fake', tcb_info: JSON.stringify({ mrtd: '00' }) }),
        );
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => srv.listen(socketPath, r));
  fake.close = () => new Promise<void>((r) => srv.close(() => r()));
  return fake;
}
