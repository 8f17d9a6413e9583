// Checks the workspace's shape: every package has a manifest and one public door.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const packages = [
  'contracts',
  'sdk',
  'attestation',
  'runtime',
  'sidecar',
  'blueprint-lib',
  'blueprint-bin',
  'client',
];

describe('workspace', () => {
  it.each(packages)('%s has a package.json whose only export is index.ts', (dir) => {
    const pkg = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
    expect(pkg.name).toBe(`@agent-sandbox/${dir}`);
    expect(pkg.type).toBe('module');
    expect(pkg.exports).toEqual({ '.': './index.ts' });
    expect(existsSync(`${dir}/index.ts`)).toBe(true);
  });
});
