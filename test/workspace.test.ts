// Checks the workspace's shape: every package has a manifest and one public door, declares every
// package its code imports, and product code never reaches into another folder or into dev tooling.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const packages = [
  'contracts',
  'platform-names',
  'devnet',
  'sdk',
  'attestation',
  'runtime',
  'sidecar',
  'sandbox-image',
  'blueprint-lib',
  'blueprint-bin',
  'client',
];

/** Dev tooling: a package that only tests, benches and scripts may import. */
const DEV_TOOLING = ['@agent-sandbox/devnet'];

interface Manifest {
  name: string;
  type: string;
  exports: Record<string, string>;
  dependencies?: Record<string, string>;
  imports?: Record<string, unknown>;
  devDependencies?: Record<string, string>;
}

const manifest = (dir: string): Manifest => JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
const root = manifest('.');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'out' || name === 'cache' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

/** Test-only code: tests, benches, vitest configs, helpers under a `testing/` folder and a package's `testing.ts` door. */
const isTestOnly = (file: string): boolean =>
  /(^|\/)vitest\.config\.ts$/.test(file) ||
  /\.(test|serial-test|bench)\.ts$/.test(file) ||
  /(^|\/)testing(\/|\.ts$)/.test(file);

/** Every module specifier a file imports or re-exports (static and dynamic). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const re of [
    /\b(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/g,
    /\bimport\s*\(\s*'([^']+)'/g,
    /^import\s+'([^']+)'/gm,
  ])
    for (const m of text.matchAll(re)) found.push(m[1]!);
  return found;
}

const packageOf = (spec: string): string =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

describe('workspace', () => {
  it.each(packages)(
    '%s has a package.json whose exports are index.ts and only the named doors (testing, browser, sealing, files, definition)',
    (dir) => {
      const pkg = manifest(dir);
      expect(pkg.name).toBe(`@agent-sandbox/${dir}`);
      expect(pkg.type).toBe('module');
      // The only side doors a package may have, each `./<name>.ts` beside index.ts:
      // testing — test-only helpers; browser — the browser-safe subset (no node: imports) the web
      // console bundles; sealing — attestation's HPKE opening + binding without the verifier, which
      // the sidecar carries into the sandbox image; files — sdk's private atomic file writer,
      // which the CLI's session cache uses without loading the whole SDK;
      // definition — blueprint-lib's chain-only door (definition, deployment, approval policy) for the devnet.
      const DOORS = ['testing', 'browser', 'sealing', 'files', 'definition'];
      const { '.': main, ...doors } = pkg.exports as Record<string, string>;
      expect(main).toBe('./index.ts');
      expect(existsSync(`${dir}/index.ts`)).toBe(true);
      for (const [door, file] of Object.entries(doors)) {
        expect(DOORS.map((d) => `./${d}`)).toContain(door);
        expect(file).toBe(`${door}.ts`);
        expect(existsSync(`${dir}/${file}`)).toBe(true);
      }
    },
  );

  it.each(packages)('%s declares every package its code imports', (dir) => {
    const pkg = manifest(dir);
    const deps = new Set(Object.keys(pkg.dependencies ?? {}));
    const devDeps = new Set([
      ...Object.keys(pkg.devDependencies ?? {}),
      ...Object.keys(root.devDependencies ?? {}),
    ]);
    const missing: string[] = [];
    for (const file of sourceFiles(dir)) {
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        // A subpath import (`#platform`) must be one the package's own "imports" field maps.
        if (spec.startsWith('#')) {
          if (!Object.hasOwn(pkg.imports ?? {}, spec)) missing.push(`${file}: ${spec}`);
          continue;
        }
        const name = packageOf(spec);
        if (name === pkg.name) continue;
        const ok = deps.has(name) || (isTestOnly(file) && devDeps.has(name));
        if (!ok) missing.push(`${file}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it.each(packages)('%s product code imports no dev tooling and stays inside its folder', (dir) => {
    const top = resolve(dir);
    const bad: string[] = [];
    for (const file of sourceFiles(dir)) {
      if (isTestOnly(file)) continue;
      for (const spec of specifiers(file)) {
        const name = packageOf(spec);
        // The operator's `devnet` command is the one product use of the devnet, loaded on demand.
        const devnetCommand = file === 'blueprint-bin/src/commands.ts' && name === '@agent-sandbox/devnet';
        if (DEV_TOOLING.includes(name) && dir !== 'devnet' && !devnetCommand) bad.push(`${file}: ${spec}`);
        if (/^@agent-sandbox\/[^/]+\/testing$/.test(spec)) bad.push(`${file}: ${spec}`);
        if (spec.startsWith('.') && relative(top, resolve(file, '..', spec)).startsWith('..'))
          bad.push(`${file}: ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('runtime and the sidecar share names through platform-names (no dependencies), not through each other', () => {
    expect(Object.keys(manifest('runtime').dependencies ?? {})).not.toContain('@agent-sandbox/sidecar');
    expect(Object.keys(manifest('sidecar').dependencies ?? {})).not.toContain('@agent-sandbox/runtime');
    for (const dir of ['runtime', 'sidecar'])
      expect(manifest(dir).dependencies).toHaveProperty(['@agent-sandbox/platform-names']);
    expect(manifest('platform-names').dependencies ?? {}).toEqual({});
    const imports = sourceFiles('platform-names').flatMap(specifiers);
    expect(imports.filter((s) => !s.startsWith('.'))).toEqual([]);
  });

  it('no package imports a sibling through a relative path, tests included', () => {
    const bad: string[] = [];
    for (const dir of packages) {
      const top = resolve(dir);
      for (const file of sourceFiles(dir))
        for (const spec of specifiers(file))
          if (spec.startsWith('.') && relative(top, resolve(file, '..', spec)).startsWith('..'))
            bad.push(`${file}: ${spec}`);
    }
    expect(bad).toEqual([]);
  });
});
