// POST /files/read, /files/write and /files/list: workspace files, confined (symlink escapes refused with 403).
import type { WorkspaceFiles } from '../files/workspace-files.ts';
import { type Handler, ok, parseBody } from '../http/http-router.ts';
import * as z from '../schema.ts';

const Encoding = z._default(z.enum(['utf8', 'base64']), 'utf8');
const Path = z.string().check(z.minLength(1));
const ReadBody = z.object({ path: Path, encoding: Encoding });
const ListBody = z.object({ path: z._default(z.string(), '') });
const WriteBody = z.object({ path: Path, content: z.string(), encoding: Encoding });

export function readFileHandler(files: WorkspaceFiles): Handler {
  return async (ctx) => {
    const body = parseBody(ReadBody, await ctx.body());
    const bytes = await files.read(body.path);
    return ok({
      success: true,
      data: { content: bytes.toString(body.encoding), encoding: body.encoding, size: bytes.length },
    });
  };
}

export function writeFileHandler(files: WorkspaceFiles): Handler {
  return async (ctx) => {
    const body = parseBody(WriteBody, await ctx.body());
    const data = await files.write(body.path, Buffer.from(body.content, body.encoding));
    return ok({ success: true, data });
  };
}

export function listFilesHandler(files: WorkspaceFiles): Handler {
  return async (ctx) => {
    const body = parseBody(ListBody, await ctx.body());
    return ok({ success: true, data: await files.list(body.path) });
  };
}
