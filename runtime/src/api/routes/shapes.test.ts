// GET /api/shapes: presets, default and ceiling, public (no session), and in the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';

describe('GET /api/shapes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      deps: {
        shapes: {
          presets: {
            small: { cpuCores: 1, memoryMb: 1024, diskGb: 10 },
            large: { cpuCores: 8, memoryMb: 32768, diskGb: 200 },
          },
          defaultPreset: 'small',
          ceiling: { cpuCores: 2, memoryMb: 8192, diskGb: 50 },
        },
      },
    });
  });
  afterAll(() => h?.close());

  it('lists each preset with whether it fits, the default and the ceiling, without a session', async () => {
    const r = await h.call('GET', '/api/shapes');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      presets: [
        { name: 'small', cpuCores: 1, memoryMb: 1024, diskGb: 10, fits: true },
        { name: 'large', cpuCores: 8, memoryMb: 32768, diskGb: 200, fits: false },
      ],
      default: 'small',
      ceiling: { cpuCores: 2, memoryMb: 8192, diskGb: 50 },
    });
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await h.call('GET', '/api/openapi.json')).json as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths['/api/shapes']).toBeDefined();
    expect(doc.components.schemas['Shapes']).toBeDefined();
  });
});
