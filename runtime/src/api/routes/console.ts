// Serves the web console's built files (the `console/` package's dist) at /console/, under a strict
// CSP: scripts only from this origin's /console/assets/ path (hashed build files), no inline script; styles from asset files
// plus the <style> elements the console's terminal creates, which carry this response's nonce.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Context, Hono } from 'hono';
import type { ApiEnv } from '../context.ts';

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
  json: 'application/json',
};
const ASSET_RE = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * The console page's CSP. Scripts only from `<origin>/console/assets/` (a path, not 'self': every
 * response of this origin, a proxied sandbox port included, would otherwise pass as a script).
 */
export function consoleCsp(nonce: string, origin: string): string {
  return [
    "default-src 'none'",
    `script-src ${origin}/console/assets/`,
    `style-src 'self' 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** GET /console/ (index, with a fresh CSP nonce) and /console/assets/<hashed file>; dir = the build output. */
export function consoleRoutes(dir: string | undefined): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  const built = dir !== undefined && existsSync(join(dir, 'index.html'));
  const index = built ? readFileSync(join(dir, 'index.html'), 'utf8') : '';
  const assetsDir = built ? join(dir, 'assets') : '';
  const assets = new Set(built && existsSync(assetsDir) ? readdirSync(assetsDir) : []);

  const page = (c: Context<ApiEnv>) => {
    if (!built) {
      return c.text(
        'the console is not built: run `npm run build -w @agent-sandbox/console`, then restart',
        503,
      );
    }
    const nonce = randomBytes(16).toString('base64');
    // The origin the browser used (CSP matches an http source against https too, behind TLS proxies).
    c.header('content-security-policy', consoleCsp(nonce, new URL(c.req.url).origin));
    return c.html(index.replace('__CSP_NONCE__', nonce));
  };
  app.get('/', (c) => c.redirect('/console/', 302));
  app.get('/console', (c) => c.redirect('/console/', 302));
  app.get('/console/', page);
  app.get('/console/assets/:name', (c) => {
    const name = c.req.param('name');
    if (!ASSET_RE.test(name) || !assets.has(name)) return c.notFound();
    const type = TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream';
    c.header('content-security-policy', "default-src 'none'");
    return c.body(readFileSync(join(assetsDir, name)), 200, { 'content-type': type });
  });
  return app;
}
