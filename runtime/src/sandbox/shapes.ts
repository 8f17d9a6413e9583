// Sandbox sizes: the operator's named presets, its default preset and its ceiling (the largest
// size a create may get), and how a create's ask is resolved against them:
// - no size named: the default preset, clamped to the ceiling field by field;
// - a preset named: that preset, refused when it is above the ceiling;
// - numbers named: each replaces that field of the preset (or the default), refused above the ceiling.
// A refusal is RESOURCES_EXCEED_LIMIT naming every field over, with the ceiling.
import { z } from 'zod';
import { RuntimeError } from '../errors.ts';

export const ShapeSchema = z.object({
  cpuCores: z.number().positive(),
  memoryMb: z.number().int().positive(),
  diskGb: z.number().int().positive(),
});
export type Shape = z.infer<typeof ShapeSchema>;

/** A preset's name: lower-case letters, digits, `-` and `_`, at most 32. */
export const SHAPE_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

export interface ShapeCatalog {
  presets: Readonly<Record<string, Shape>>;
  /** The preset a create that names no size gets (clamped to the ceiling). */
  defaultPreset: string;
  ceiling: Shape;
}

/** What a create asks for: a preset name and/or numbers (0 or absent = from the preset). */
export interface ShapeAsk {
  shape?: string | undefined;
  cpuCores?: number | undefined;
  memoryMb?: number | undefined;
  diskGb?: number | undefined;
}

const FIELDS = [
  ['cpuCores', 'cpu_cores', 'cores'],
  ['memoryMb', 'memory_mb', 'MB'],
  ['diskGb', 'disk_gb', 'GB'],
] as const;

export const clampShape = (s: Shape, ceiling: Shape): Shape => ({
  cpuCores: Math.min(s.cpuCores, ceiling.cpuCores),
  memoryMb: Math.min(s.memoryMb, ceiling.memoryMb),
  diskGb: Math.min(s.diskGb, ceiling.diskGb),
});

/** Whether a preset fits under the ceiling as it is. */
export const fitsCeiling = (s: Shape, ceiling: Shape): boolean => FIELDS.every(([k]) => s[k] <= ceiling[k]);

/** Checks a catalog once (at config time): names valid, the default one of them. */
export function checkShapeCatalog(c: ShapeCatalog): ShapeCatalog {
  const names = Object.keys(c.presets);
  if (names.length === 0) throw new RuntimeError('VALIDATION', 'at least one sandbox shape preset is needed');
  for (const n of names) {
    if (!SHAPE_NAME.test(n)) {
      throw new RuntimeError(
        'VALIDATION',
        `shape preset name "${n}" is not allowed: use lower-case letters, digits, - and _ (at most 32)`,
      );
    }
    ShapeSchema.parse(c.presets[n]);
  }
  if (!(c.defaultPreset in c.presets)) {
    throw new RuntimeError(
      'VALIDATION',
      `the default shape "${c.defaultPreset}" is not one of the presets (${names.join(', ')})`,
    );
  }
  return c;
}

/** The resources a create gets, or RESOURCES_EXCEED_LIMIT / VALIDATION saying why not. */
export function resolveShape(ask: ShapeAsk, c: ShapeCatalog): Shape & { preset: string | null } {
  const named = ask.shape?.trim() || undefined;
  if (named !== undefined && !Object.hasOwn(c.presets, named)) {
    throw new RuntimeError(
      'VALIDATION',
      `shape "${named.slice(0, 40)}" is not one of this operator's presets (${Object.keys(c.presets).join(', ')}); see GET /api/shapes`,
      { details: { field: 'shape', presets: Object.keys(c.presets) } },
    );
  }
  const base = named !== undefined ? c.presets[named]! : clampShape(c.presets[c.defaultPreset]!, c.ceiling);
  const out: Shape = {
    cpuCores: ask.cpuCores || base.cpuCores,
    memoryMb: ask.memoryMb || base.memoryMb,
    diskGb: ask.diskGb || base.diskGb,
  };
  const over = FIELDS.filter(([k]) => out[k] > c.ceiling[k]);
  if (over.length > 0) {
    const what = over.map(([k, f, unit]) => `${f} ${out[k]} > ceiling ${c.ceiling[k]} ${unit}`);
    const from = named !== undefined ? ` of preset "${named}"` : '';
    throw new RuntimeError(
      'RESOURCES_EXCEED_LIMIT',
      `${what.join(', ')}: the size${from} is above this operator's ceiling; ask for less or a preset that fits (GET /api/shapes)`,
      {
        details: {
          fields: over.map(([, f]) => f),
          requested: Object.fromEntries(over.map(([k, f]) => [f, out[k]])),
          ceiling: {
            cpu_cores: c.ceiling.cpuCores,
            memory_mb: c.ceiling.memoryMb,
            disk_gb: c.ceiling.diskGb,
          },
        },
      },
    );
  }
  return { ...out, preset: named ?? (ask.cpuCores || ask.memoryMb || ask.diskGb ? null : c.defaultPreset) };
}

/** `small:1:1024:10,medium:2:4096:20` → presets (the operator's SANDBOX_SHAPES). */
export function parseShapeList(text: string): Record<string, Shape> {
  const out: Record<string, Shape> = {};
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([^:]+):([0-9.]+):([0-9]+):([0-9]+)$/.exec(item);
    const shape = m && { cpuCores: Number(m[2]), memoryMb: Number(m[3]), diskGb: Number(m[4]) };
    if (!m || !shape || !ShapeSchema.safeParse(shape).success || !SHAPE_NAME.test(m[1]!)) {
      throw new RuntimeError(
        'VALIDATION',
        `shape "${item.slice(0, 60)}" is not NAME:CPU_CORES:MEMORY_MB:DISK_GB (e.g. small:1:1024:10)`,
      );
    }
    if (m[1]! in out) throw new RuntimeError('VALIDATION', `shape "${m[1]}" is listed twice`);
    out[m[1]!] = shape;
  }
  return out;
}
