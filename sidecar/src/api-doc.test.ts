// sidecar/API.md is the sidecar API's reference: every route the app serves (TEE routes included)
// is in its table, and every row is a route the app serves.
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createApp } from './app.ts';
import { loadConfig } from './config.ts';

const DOC = readFileSync(new URL('../API.md', import.meta.url), 'utf8');

describe('sidecar/API.md', () => {
  it('documents exactly the routes the router serves', () => {
    const config = loadConfig({
      SIDECAR_AUTH_TOKEN: 'x'.repeat(32),
      SIDECAR_TEE: 'dstack',
      SIDECAR_TEE_CONTEXT: `31337:1:sbx-doc:0x${'ab'.repeat(20)}:0x${'cd'.repeat(20)}`,
      SIDECAR_DSTACK_SOCKET: '/nonexistent/dstack.sock',
    });
    const app = createApp(config, pino({ level: 'silent' }));
    try {
      const served = app.router.routes.map((r) => `${r.method} ${r.path}`).sort();
      const documented = [...DOC.matchAll(/^\| `([A-Z]+)` \| `(\/[^`]*)` \|/gm)]
        .map((m) => `${m[1]} ${m[2]}`)
        .sort();
      expect(documented).toEqual(served);
    } finally {
      app.close();
    }
  });
});
