// Owner-only workspace files over the sidecar's `/files/*`: list a directory, read (download) and
// write (upload) a file. Confinement (no `..`, no symlink escapes) and the size limit are the
// sidecar's, checked on the file it actually opens; this layer adds the owner check and raw bytes.
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';
import { assertRunning } from '../middleware/session.ts';
import { errors, json, SANDBOX_ERRORS } from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const PathQuery = z.object({
  path: z.string().max(4096).openapi({
    description: 'Workspace-relative (or absolute inside the workspace) path',
    example: 'notes.txt',
  }),
});
const DirQuery = z.object({
  path: z.string().max(4096).optional().openapi({ description: 'Directory; the workspace root when absent' }),
});

export const FileListSchema = z
  .object({
    path: z.string(),
    entries: z.array(
      z.object({
        name: z.string(),
        type: z.enum(['file', 'directory', 'symlink', 'other']),
        size: z.number().int(),
        mtime_ms: z.number().int(),
      }),
    ),
    truncated: z.boolean(),
  })
  .openapi('FileList');

export const FileWrittenSchema = z
  .object({ path: z.string(), size: z.number().int(), sha256: z.string() })
  .openapi('FileWritten');

const listRoute = createRoute({
  method: 'get',
  path: '/files',
  tags: ['files'],
  summary: 'List a workspace directory (symlinks reported, never followed; at most 1000 entries)',
  security: [{ bearer: [] }],
  request: { query: DirQuery },
  responses: { 200: json(FileListSchema, 'Entries'), ...errors(400, ...SANDBOX_ERRORS, 409, 502, 503, 504) },
});

const readRoute = createRoute({
  method: 'get',
  path: '/files/content',
  tags: ['files'],
  summary: 'Download a workspace file as raw bytes (limit: the sidecar’s 16 MiB)',
  security: [{ bearer: [] }],
  request: { query: PathQuery },
  responses: {
    200: {
      description: 'The file’s bytes (attachment)',
      content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
    },
    ...errors(400, ...SANDBOX_ERRORS, 409, 413, 502, 503, 504),
  },
});

const writeRoute = createRoute({
  method: 'put',
  path: '/files/content',
  tags: ['files'],
  summary: 'Upload a workspace file (raw body, replaces it; parents created; limit 16 MiB)',
  security: [{ bearer: [] }],
  request: {
    query: PathQuery,
    body: {
      required: true,
      content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
    },
  },
  responses: {
    200: json(FileWrittenSchema, 'Written'),
    ...errors(400, ...SANDBOX_ERRORS, 409, 413, 502, 503, 504),
  },
});

/** A filename safe for Content-Disposition: the last segment, ASCII fallback plus RFC 5987 UTF-8. */
function disposition(path: string): string {
  const name = path.split('/').filter(Boolean).pop() ?? 'file';
  const ascii = name.replace(/[^A-Za-z0-9._-]/g, '_') || 'file';
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export function registerFiles(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps): void {
  app.openapi(listRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const { path } = c.req.valid('query');
    const client = await d.sidecars.client(record.id);
    const r = await client.listFiles(path ?? '', { requestId: c.get('requestId') });
    const entries = r.entries.map((e) => ({
      name: String(e.name),
      type: (['file', 'directory', 'symlink'].includes(e.type) ? e.type : 'other') as
        | 'file'
        | 'directory'
        | 'symlink'
        | 'other',
      size: Math.trunc(Number(e.size) || 0),
      mtime_ms: Math.trunc(Number(e.mtimeMs) || 0),
    }));
    return c.json({ path: r.path, entries, truncated: r.truncated === true }, 200);
  });

  app.openapi(readRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const { path } = c.req.valid('query');
    if (!path) throw new RuntimeError('VALIDATION', 'path is required: ?path=<file in the workspace>');
    const client = await d.sidecars.client(record.id);
    const r = await client.readFile(path, { encoding: 'base64', requestId: c.get('requestId') });
    const bytes = Buffer.from(r.content, 'base64');
    return c.body(new Uint8Array(bytes), 200, {
      'content-type': 'application/octet-stream',
      'content-disposition': disposition(path),
      'cache-control': 'no-store',
    });
  });

  app.openapi(writeRoute, async (c) => {
    const record = c.get('sandbox');
    assertRunning(record);
    const { path } = c.req.valid('query');
    if (!path) throw new RuntimeError('VALIDATION', 'path is required: ?path=<file in the workspace>');
    const bytes = Buffer.from(await c.req.arrayBuffer());
    const client = await d.sidecars.client(record.id);
    const r = await client.writeFile(path, bytes.toString('base64'), {
      encoding: 'base64',
      requestId: c.get('requestId'),
    });
    return c.json({ path, size: r.size ?? bytes.length, sha256: r.hash ?? '' }, 200);
  });
}
