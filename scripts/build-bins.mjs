#!/usr/bin/env node
// Bundles the two published programs into plain JavaScript, so they start without compiling
// TypeScript (tsx) on every run: client/dist/cli.mjs (`agent-sandbox`) and
// blueprint-bin/dist/main.mjs (`agent-sandbox-operator`). Run by `npm run build`, scripts/test.sh
// and scripts/demo.sh; needs the generated ABIs (node scripts/contracts-build.mjs) first.
// Usage: node scripts/build-bins.mjs [client|operator ...]   (default: both)
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A bundled module's `import.meta.url` would name the bundle, not the source file it came from;
 * the workspace code resolves files next to its source (the repo root, the sidecar entry, test
 * anchors), so each source keeps its own URL. The bundle runs in place (dist/ beside src/).
 */
const sourceUrls = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${join(root, 'node_modules')}/`) && !args.path.includes('@agent-sandbox'))
        return;
      const text = readFileSync(args.path, 'utf8');
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: 'ts',
      };
    });
  },
};

/**
 * npm packages stay in node_modules (native addons, worker files, transports loaded by name),
 * imported by the absolute path their importer resolves to: packages may hold their own version of
 * a dependency (attestation's @noble/curves 2 beside the root's 1).
 */
const workspaceOnly = {
  name: 'workspace-only',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      // Workspace packages, node builtins and a package's own subpath imports (`#platform`) are bundled.
      if (
        args.path.startsWith('@agent-sandbox/') ||
        args.path.startsWith('node:') ||
        args.path.startsWith('#') ||
        args.pluginData?.inner
      )
        return;
      const r = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { inner: true },
      });
      if (r.errors.length) return { errors: r.errors };
      return { path: r.external ? args.path : pathToFileURL(r.path).href, external: true };
    });
  },
};

const TARGETS = {
  client: {
    entry: 'client/src/cli/bin.ts',
    out: 'client/dist/cli.mjs',
    // The CLI's whole dependency tree goes in the bundle, split at its dynamic imports: `--help`
    // reads only the entry chunk; a command loads its own chunks (dist/chunks/) when it runs.
    plugins: [sourceUrls],
    split: true,
  },
  operator: {
    entry: 'blueprint-bin/src/main.ts',
    out: 'blueprint-bin/dist/main.mjs',
    plugins: [sourceUrls, workspaceOnly],
    // A small young generation: V8's default lets it grow to 3 × 16 MiB, which a long-running
    // operator fills and keeps resident. With 2 MiB semi-spaces the bundled operator idles at
    // 133-142 MiB instead of 162-164 and holds 40 sandboxes at 130-148 instead of 166-171
    // (bench/scale.bench.ts --n 40 --node-options, A B A B, bench/RESULTS.md). In the shebang (env -S), so
    // `agent-sandbox-operator` runs with it; spawnOperator reads it from there for `node main.mjs`.
    nodeFlags: ['--max-semi-space-size=2'],
  },
};

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!(name in TARGETS)) {
    console.error(`build-bins: unknown target '${name}' (targets: ${Object.keys(TARGETS).join(', ')})`);
    process.exit(2);
  }
}
for (const [name, t] of Object.entries(TARGETS)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const t0 = Date.now();
  const outfile = join(root, t.out);
  const dir = dirname(outfile);
  if (t.split) rmSync(join(dir, 'chunks'), { recursive: true, force: true });
  await build({
    entryPoints: { [basename(t.out, '.mjs')]: join(root, t.entry) },
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    ...(t.split ? { splitting: true, chunkNames: 'chunks/[name]-[hash]' } : {}),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    // Bundled CommonJS dependencies call require(); give the ES module one.
    banner: {
      js: `#!/usr/bin/env ${t.nodeFlags ? `-S node ${t.nodeFlags.join(' ')}` : 'node'}\nimport { createRequire as __asbxRequire } from 'node:module';\nconst require = __asbxRequire(import.meta.url);`,
    },
    plugins: t.plugins,
  });
  chmodSync(outfile, 0o755);
  process.stderr.write(`[build-bins] ${t.out} in ${Date.now() - t0} ms\n`);
}
// npm links a package's bins at install only when their files exist; on a fresh clone they did
// not, so link them now (no install scripts run).
execFileSync(
  'npm',
  ['rebuild', '--ignore-scripts', '@agent-sandbox/client', '@agent-sandbox/blueprint-bin'],
  {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
