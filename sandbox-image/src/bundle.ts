// Bundles the sidecar server into two CommonJS files that run on the image's Node.js 18: the boot
// (sidecar.cjs: /health and PUT /env, what a sandbox needs to be ready) and the app
// (sidecar-app.cjs: every other route), which the boot requires after the env is delivered.
// Node 18 compiles every byte of a file it loads: a 650 KB single bundle cost its compile before
// the first /health could answer; the boot alone is ~90 KB.
import { SIDECAR_APP_ENTRY, SIDECAR_APP_MODULE, SIDECAR_ENTRY } from '@agent-sandbox/sidecar';
import { type BuildOptions, build, type Plugin } from 'esbuild';

/** File name → contents, in the order they are hashed and copied into the image. */
export type SidecarBundle = Record<'sidecar.cjs' | 'sidecar-app.cjs', Buffer>;

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

/**
 * The attestation package's modules only declare things: marked free of side effects, the boot
 * keeps the one function its config check uses (parseContext) instead of every module re-exported
 * by `@agent-sandbox/attestation/sealing` (and the full zod they import, ~450 KB).
 */
const attestationIsPure: Plugin = {
  name: 'attestation-is-pure',
  setup(b) {
    const inAttestation = (p: string) => /[\\/]attestation[\\/]/.test(p) && !p.includes('node_modules');
    b.onResolve({ filter: /^(@agent-sandbox\/attestation|\.\.?\/)/ }, async (a) => {
      if (a.pluginData === 'attestation-is-pure') return undefined;
      if (!a.path.startsWith('@agent-sandbox/attestation') && !inAttestation(a.importer)) return undefined;
      const r = await b.resolve(a.path, {
        resolveDir: a.resolveDir,
        kind: a.kind,
        importer: a.importer,
        pluginData: 'attestation-is-pure',
      });
      return r.errors.length || !inAttestation(r.path) ? undefined : { path: r.path, sideEffects: false };
    });
  },
};

/** In the boot, the app is the other file, required when it is first needed. */
const appIsSeparate: Plugin = {
  name: 'app-is-separate',
  setup(b) {
    b.onLoad({ filter: /app-module\.ts$/ }, (a) =>
      a.path === SIDECAR_APP_MODULE
        ? {
            contents:
              "export const importApp = () => Promise.resolve().then(() => require('./sidecar-app.cjs'));",
            loader: 'js',
          }
        : undefined,
    );
  },
};

const common: BuildOptions = {
  bundle: true,
  platform: 'node',
  // Debian bookworm ships Node.js 18; everything must parse and run there.
  target: 'node18',
  format: 'cjs',
  minify: true,
  legalComments: 'none',
  write: false,
  logLevel: 'silent',
};

async function one(entry: string, plugins: Plugin[], external: string[] = []): Promise<Buffer> {
  const result = await build({ ...common, entryPoints: [entry], plugins, external });
  const file = result.outputFiles?.[0];
  if (!file) throw new Error(`esbuild produced no output for ${entry}`);
  return Buffer.from(file.contents);
}

/** Deterministic JS files (same sources → same bytes → same image tag). */
export async function bundleSidecar(): Promise<SidecarBundle> {
  const [boot, app] = await Promise.all([
    one(SIDECAR_ENTRY, [noPinoTransports, attestationIsPure, appIsSeparate], ['./sidecar-app.cjs']),
    one(SIDECAR_APP_ENTRY, [noPinoTransports]),
  ]);
  return { 'sidecar.cjs': boot, 'sidecar-app.cjs': app };
}
