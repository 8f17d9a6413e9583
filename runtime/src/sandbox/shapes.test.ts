// Sizes as the model says: no size = the default preset clamped to the ceiling; a named preset
// or numbers above the ceiling = RESOURCES_EXCEED_LIMIT naming the field and the ceiling.
import { describe, expect, it } from 'vitest';
import { RuntimeError } from '../errors.ts';
import { parseSandboxRuntimeConfig, sandboxRuntimeConfigFromEnv, shapeCatalog } from './config.ts';
import { resolveCreate } from './request.ts';
import { parseShapeList, resolveShape, type ShapeCatalog } from './shapes.ts';

const catalog: ShapeCatalog = {
  presets: {
    small: { cpuCores: 1, memoryMb: 1024, diskGb: 10 },
    big: { cpuCores: 4, memoryMb: 16384, diskGb: 100 },
  },
  defaultPreset: 'big',
  ceiling: { cpuCores: 2, memoryMb: 8192, diskGb: 50 },
};

const refusal = (f: () => unknown): RuntimeError => {
  try {
    f();
  } catch (e) {
    return e as RuntimeError;
  }
  throw new Error('expected a refusal');
};

describe('resolveShape', () => {
  it('gives a create that names no size the default preset, clamped to the ceiling field by field', () => {
    expect(resolveShape({}, catalog)).toEqual({ cpuCores: 2, memoryMb: 8192, diskGb: 50, preset: 'big' });
    expect(resolveShape({ cpuCores: 0, memoryMb: 0, diskGb: 0 }, catalog)).toMatchObject({ cpuCores: 2 });
  });

  it('gives a named preset as it is, and numbers override its fields', () => {
    expect(resolveShape({ shape: 'small' }, catalog)).toEqual({
      cpuCores: 1,
      memoryMb: 1024,
      diskGb: 10,
      preset: 'small',
    });
    expect(resolveShape({ shape: 'small', memoryMb: 2048 }, catalog)).toMatchObject({
      cpuCores: 1,
      memoryMb: 2048,
      diskGb: 10,
    });
  });

  it('refuses numbers above the ceiling with RESOURCES_EXCEED_LIMIT naming each field and the ceiling', () => {
    const e = refusal(() => resolveShape({ cpuCores: 3, diskGb: 51 }, catalog));
    expect(e).toBeInstanceOf(RuntimeError);
    expect(e.code).toBe('RESOURCES_EXCEED_LIMIT');
    expect(e.message).toContain('cpu_cores 3 > ceiling 2 cores');
    expect(e.message).toContain('disk_gb 51 > ceiling 50 GB');
    expect(e.message).not.toContain('memory_mb');
    expect(e.details).toMatchObject({
      fields: ['cpu_cores', 'disk_gb'],
      ceiling: { cpu_cores: 2, memory_mb: 8192, disk_gb: 50 },
    });
  });

  it('refuses a named preset above the ceiling (it is not clamped: only the default is)', () => {
    const e = refusal(() => resolveShape({ shape: 'big' }, catalog));
    expect(e.code).toBe('RESOURCES_EXCEED_LIMIT');
    expect(e.message).toMatch(/preset "big"/);
  });

  it('refuses an unknown preset naming the presets, and never a name like __proto__', () => {
    for (const shape of ['huge', '__proto__', 'constructor']) {
      const e = refusal(() => resolveShape({ shape }, catalog));
      expect(e.code).toBe('VALIDATION');
      expect(e.message).toContain('small, big');
    }
  });
});

describe('shape configuration', () => {
  it('parses SANDBOX_SHAPES and refuses a malformed entry, a duplicate, or a default not among them', () => {
    expect(parseShapeList('small:1:1024:10, medium:1.5:4096:20')).toEqual({
      small: { cpuCores: 1, memoryMb: 1024, diskGb: 10 },
      medium: { cpuCores: 1.5, memoryMb: 4096, diskGb: 20 },
    });
    expect(() => parseShapeList('small:1:1024')).toThrow(/NAME:CPU_CORES:MEMORY_MB:DISK_GB/);
    expect(() => parseShapeList('Small:1:1024:10')).toThrow(/NAME/);
    expect(() => parseShapeList('a:1:1:1,a:2:2:2')).toThrow(/twice/);
    expect(() =>
      sandboxRuntimeConfigFromEnv(
        { SANDBOX_SHAPES: 'small:1:1024:10', SANDBOX_DEFAULT_SHAPE: 'large' },
        { image: 'x', snapshotDir: '/tmp/x' },
      ),
    ).toThrow(/default shape "large" is not one of the presets \(small\)/);
  });

  it('without presets offers one, `default`, of the SANDBOX_DEFAULT_* values', () => {
    const cfg = parseSandboxRuntimeConfig({ image: 'x', snapshotDir: '/tmp/x' });
    expect(shapeCatalog(cfg)).toEqual({
      presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 10 } },
      defaultPreset: 'default',
      ceiling: { cpuCores: 2, memoryMb: 8192, diskGb: 50 },
    });
  });

  it('a runtime create with no size gets the default preset clamped; above the ceiling is refused', () => {
    const cfg = sandboxRuntimeConfigFromEnv(
      { SANDBOX_SHAPES: 'small:1:512:5,big:4:4096:20', SANDBOX_DEFAULT_SHAPE: 'big' },
      { image: 'x', snapshotDir: '/tmp/x' },
    );
    // The default preset clamped is also what the warm pool and the per-field defaults use.
    expect([cfg.defaultCpuCores, cfg.defaultMemoryMb, cfg.defaultDiskGb]).toEqual([2, 4096, 20]);
    const base = { owner: 'o', serviceId: 1, callId: 1 };
    expect(resolveCreate(base, cfg)).toMatchObject({ cpuCores: 2, memoryMb: 4096, diskGb: 20 });
    expect(resolveCreate({ ...base, shape: 'small' }, cfg)).toMatchObject({ cpuCores: 1, memoryMb: 512 });
    expect(() => resolveCreate({ ...base, memoryMb: 9000 }, cfg)).toThrow(/memory_mb 9000 > ceiling 8192 MB/);
  });
});
