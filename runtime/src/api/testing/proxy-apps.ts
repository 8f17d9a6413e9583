// Test-only: small apps the port proxy is tested against, as self-contained Node scripts (so the
// same file runs on the host and inside a sandbox container), and a WebSocket client that does
// the RFC 6455 handshake and one masked text frame round trip over node:http.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';

/**
 * `node app.js <port>`: GET /gz answers a gzip-compressed text with content-encoding: gzip (and
 * content-length of the compressed bytes); GET /hdr echoes the request headers as JSON; an
 * upgrade to WebSocket echoes every text frame back and sends the upgrade path in X-Echo-Path.
 * Prints {"port":N} once listening.
 */
export const PROXY_APP_JS = `
const http = require('node:http');
const crypto = require('node:crypto');
const zlib = require('node:zlib');
const TEXT = 'compressible '.repeat(200);
const GZ = zlib.gzipSync(TEXT);
const server = http.createServer((req, res) => {
  if (req.url === '/gz') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': GZ.length });
    return res.end(GZ);
  }
  if (req.url.startsWith('/hdr')) {
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close, x-hop', 'x-hop': 'secret-hop', 'keep-alive': 'timeout=77' });
    return res.end(JSON.stringify({ url: req.url, headers: req.headers }));
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('app ' + req.url);
});
server.on('upgrade', (req, sock) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  sock.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\nX-Echo-Path: ' + req.url + '\\r\\n\\r\\n');
  let buf = Buffer.alloc(0);
  sock.on('error', () => {});
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (buf.length < 2) return;
      const op = buf[0] & 15;
      let len = buf[1] & 127;
      let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      const masked = (buf[1] & 128) !== 0;
      const maskAt = off;
      if (masked) off += 4;
      if (buf.length < off + len) return;
      const p = Buffer.from(buf.subarray(off, off + len));
      if (masked) for (let i = 0; i < len; i++) p[i] ^= buf[maskAt + (i % 4)];
      buf = buf.subarray(off + len);
      if (op === 8) return sock.end();
      const h = len < 126 ? Buffer.from([0x80 | op, len]) : Buffer.from([0x80 | op, 126, len >> 8, len & 255]);
      sock.write(Buffer.concat([h, p]));
    }
  });
});
server.listen(Number(process.argv[2] || 0), '0.0.0.0', () => console.log(JSON.stringify({ port: server.address().port })));
`;

export interface WsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The echoed text, when the upgrade succeeded. */
  echo?: string;
  /** The body of a refused upgrade. */
  body?: string;
}

/** Upgrades `url` to a WebSocket, sends `text` in one masked frame, reads one frame back. */
export function wsRoundTrip(url: string, headers: Record<string, string>, text: string): Promise<WsResult> {
  const key = randomBytes(16).toString('base64');
  const expected = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  return new Promise((resolve, reject) => {
    const req = request(url, {
      headers: {
        ...headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
      },
    });
    req.on('error', reject);
    req.on('response', async (res) => {
      let body = '';
      for await (const c of res) body += c;
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
    });
    req.on('upgrade', (res, socket) => {
      if (res.headers['sec-websocket-accept'] !== expected) {
        socket.destroy();
        return reject(new Error('bad Sec-WebSocket-Accept'));
      }
      const payload = Buffer.from(text);
      const mask = randomBytes(4);
      const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
      const len =
        payload.length < 126
          ? Buffer.from([0x80 | payload.length])
          : Buffer.from([0x80 | 126, payload.length >> 8, payload.length & 255]);
      socket.write(Buffer.concat([Buffer.from([0x81]), len, mask, masked]));
      let buf = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length < 2) return;
        let n = buf[1]! & 127;
        let off = 2;
        if (n === 126) {
          if (buf.length < 4) return;
          n = buf.readUInt16BE(2);
          off = 4;
        }
        if (buf.length < off + n) return;
        socket.end(Buffer.from([0x88, 0x80, 0, 0, 0, 0]));
        socket.destroy();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          echo: buf.subarray(off, off + n).toString(),
        });
      });
      socket.on('error', reject);
    });
    req.end();
  });
}
