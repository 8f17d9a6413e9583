// GET /console/: the built console under a strict CSP with a fresh nonce per response; only the
// hashed asset files present at start are served; without a build, a 503 that says how to build.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';

describe('console route', () => {
  let dir: string;
  let h: Harness;
  let bare: Harness;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'console-dist-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(
      join(dir, 'index.html'),
      '<meta name="csp-nonce" content="__CSP_NONCE__"><script type="module" src="/console/assets/index-abc.js"></script>',
    );
    await writeFile(join(dir, 'assets', 'index-abc.js'), 'console.log(1)');
    await writeFile(join(dir, 'secret.txt'), 'not an asset');
    h = await startHarness({ deps: { consoleDir: dir } });
    bare = await startHarness();
  });
  afterAll(async () => {
    await h.close();
    await bare.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the page with a strict CSP and a fresh nonce each time', async () => {
    const a = await h.call('GET', '/console/');
    const b = await h.call('GET', '/console/');
    expect(a.status).toBe(200);
    const csp = a.headers.get('content-security-policy')!;
    // Scripts from the console's own asset path only: a proxied sandbox response on this origin
    // (…/port/…) is no console script (this was `script-src 'self'` before).
    expect(csp).toContain(`script-src ${h.url}/console/assets/;`);
    expect(csp).not.toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(a.text).toContain(`content="${nonce}"`);
    expect(b.headers.get('content-security-policy')).not.toBe(csp);
    expect((await fetch(`${h.url}/`, { redirect: 'manual' })).headers.get('location')).toBe('/console/');
  });

  it('serves only the build’s asset files, with their type', async () => {
    const js = await h.call('GET', '/console/assets/index-abc.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('text/javascript');
    for (const p of [
      '/console/assets/..%2Fsecret.txt',
      '/console/assets/../secret.txt',
      '/console/assets/nope.js',
    ]) {
      const r = await h.call('GET', p);
      expect(r.status).toBe(404);
      expect(r.text).not.toContain('not an asset');
    }
  });

  it('says how to build it when there is no build', async () => {
    const r = await bare.call('GET', '/console/');
    expect(r.status).toBe(503);
    expect(r.text).toContain('npm run build -w @agent-sandbox/console');
  });
});
