// Bundles the sidecar server into one CommonJS file that runs on the image's Node.js 18.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ENTRY = fileURLToPath(new URL('../main.ts', import.meta.url));

/** One deterministic JS file (same sources → same bytes → same image tag). */
export async function bundleSidecar(): Promise<Buffer> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'node',
    // Debian bookworm ships Node.js 18; everything must parse and run there.
    target: 'node18',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no output for the sidecar bundle');
  return Buffer.from(file.contents);
}
