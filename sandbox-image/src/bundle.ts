// Bundles the sidecar server into one CommonJS file that runs on the image's Node.js 18.
import { SIDECAR_ENTRY } from '@agent-sandbox/sidecar';
import { build, type Plugin } from 'esbuild';

/**
 * pino's transports run in worker threads (thread-stream); the sidecar logs to stdout only, so the
 * bundle gets a stub instead and never pays for compiling worker_threads at startup.
 */
const noPinoTransports: Plugin = {
  name: 'no-pino-transports',
  setup(b) {
    b.onResolve({ filter: /^thread-stream$/ }, () => ({ path: 'thread-stream', namespace: 'stub' }));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents:
        "module.exports = function ThreadStream() { throw new Error('pino transports are not bundled in the sidecar'); };",
      loader: 'js',
    }));
  },
};

/** One deterministic JS file (same sources → same bytes → same image tag). */
export async function bundleSidecar(): Promise<Buffer> {
  const result = await build({
    entryPoints: [SIDECAR_ENTRY],
    bundle: true,
    platform: 'node',
    // Debian bookworm ships Node.js 18; everything must parse and run there.
    target: 'node18',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
    plugins: [noPinoTransports],
  });
  const file = result.outputFiles[0];
  if (!file) throw new Error('esbuild produced no output for the sidecar bundle');
  return Buffer.from(file.contents);
}
