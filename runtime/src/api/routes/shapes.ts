// GET /api/shapes: the operator's size presets, the default preset and the ceiling (the largest
// size a create may get). Public, like the capability document: a client reads it before it
// creates, and the console's create form offers the presets.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { fitsCeiling, type ShapeCatalog } from '../../sandbox/shapes.ts';
import type { ApiEnv } from '../context.ts';
import { errors, json } from '../schemas.ts';

const SizeSchema = z.object({
  cpuCores: z.number(),
  memoryMb: z.number().int(),
  diskGb: z.number().int(),
});

export const ShapesSchema = z
  .object({
    presets: z.array(
      SizeSchema.extend({
        name: z.string(),
        fits: z.boolean().openapi({
          description: 'false: above the ceiling; a create naming it is refused (RESOURCES_EXCEED_LIMIT)',
        }),
      }),
    ),
    default: z.string().openapi({
      description: 'the preset a create that names no size gets, clamped to the ceiling field by field',
    }),
    ceiling: SizeSchema.openapi({
      description: 'the largest size a create may get; above it is RESOURCES_EXCEED_LIMIT naming the field',
    }),
  })
  .openapi('Shapes');

const shapesRoute = createRoute({
  method: 'get',
  path: '/api/shapes',
  tags: ['public'],
  summary: 'Size presets, the default preset and the ceiling',
  responses: { 200: json(ShapesSchema, 'Shapes'), ...errors(404, 429) },
});

export function registerShapes(app: OpenAPIHono<ApiEnv>, shapes: ShapeCatalog | undefined): void {
  if (!shapes) return;
  const body = {
    presets: Object.entries(shapes.presets).map(([name, s]) => ({
      name,
      cpuCores: s.cpuCores,
      memoryMb: s.memoryMb,
      diskGb: s.diskGb,
      fits: fitsCeiling(s, shapes.ceiling),
    })),
    default: shapes.defaultPreset,
    ceiling: { ...shapes.ceiling },
  };
  app.openapi(shapesRoute, (c) => c.json(body, 200));
}
