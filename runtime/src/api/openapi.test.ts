// The OpenAPI document is the operator API's reference: every route it lists is served, and every
// route served under /api (and the public ones) is in it, in each mode. The few routes left out are
// named here with why.
import { describe, expect, it } from 'vitest';
import type { OperatorApiDeps } from './deps.ts';
import { openApiDocument } from './openapi.ts';
import { startHarness } from './testing/harness.ts';

/** Served, but not API operations: the document itself and the web console's files. */
const NOT_DOCUMENTED = new Set(['GET /', 'GET /api/openapi.json', 'GET /console', 'GET /console/']);
// `…/port/{port}` is the same proxy as the documented `…/port/{port}/{rest}` with an empty rest.
const notDocumented = (r: string) =>
  NOT_DOCUMENTED.has(r) || r.startsWith('GET /console/assets/') || /\/port\/:port$/.test(r);

const MODES: Array<[OperatorApiDeps['mode'], Partial<OperatorApiDeps>]> = [
  ['cloud', {}],
  ['instance', { instanceSandboxId: () => 'sbx-instance' }],
  // Route registration reads no TEE method: the service itself is exercised in routes/tee.test.ts.
  ['tee-instance', { instanceSandboxId: () => 'sbx-instance', tee: {} as OperatorApiDeps['tee'] }],
];

describe.each(MODES)('OpenAPI document (%s mode)', (mode, deps) => {
  it('lists exactly the routes the API serves', async () => {
    const h = await startHarness({ mode, deps });
    try {
      // Port-proxy paths take every method (ALL); the document lists their GET.
      const served = new Set(
        h.api.routes
          .filter((r) => r.method !== 'ALL' || r.path.includes('/port/'))
          .map((r) => `${r.method === 'ALL' ? 'GET' : r.method} ${r.path.replace(/\/\*$/, '/:rest')}`),
      );
      const doc = openApiDocument(h.api) as { paths: Record<string, Record<string, unknown>> };
      const documented = new Set(
        Object.entries(doc.paths).flatMap(([p, item]) =>
          Object.keys(item).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`),
        ),
      );
      expect(
        [...documented].filter((r) => !served.has(r)),
        'documented but not served',
      ).toEqual([]);
      expect(
        [...served].filter((r) => !documented.has(r) && !notDocumented(r)),
        'served but not documented',
      ).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
