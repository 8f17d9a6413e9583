// `agent-sandbox files ls|get|put`: the sandbox's workspace files, over the operator's file routes
// or, with --tee, the enclave's own over the owner channel (bodies encrypted end to end).
import { readFile, writeFile } from 'node:fs/promises';
import { ClientError } from '../errors.ts';
import { type Command, sandboxOps } from './commands.ts';

async function readStdin(stdin: NodeJS.ReadableStream): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  for await (const c of stdin) parts.push(typeof c === 'string' ? Buffer.from(c) : c);
  return new Uint8Array(Buffer.concat(parts));
}

export const files: Command = async (ctx) => {
  const [action, id, ...rest] = ctx.args.positionals as [string, string, ...string[]];
  const usage = (msg: string) => new ClientError('USAGE', `files ${action}: ${msg}`);
  switch (action) {
    case 'ls': {
      if (rest.length > 1) throw usage('takes at most one directory');
      const list = await (await sandboxOps(ctx, id)).listFiles(id, rest[0] ?? '');
      if (ctx.json) ctx.printJson(list);
      else {
        for (const e of list.entries)
          ctx.out(`${e.type === 'directory' ? 'd' : e.type === 'symlink' ? 'l' : '-'}\t${e.size}\t${e.name}`);
        if (list.truncated) ctx.note('(truncated: more entries exist)');
      }
      return 0;
    }
    case 'get': {
      const [path, local] = rest;
      if (!path || rest.length > 2) throw usage('give PATH and optionally LOCAL (- or none for stdout)');
      const bytes = await (await sandboxOps(ctx, id)).readFile(id, path);
      if (local && local !== '-') {
        await writeFile(local, bytes);
        if (ctx.json) ctx.printJson({ path, local, size: bytes.length });
        else ctx.note(`${path} → ${local} (${bytes.length} bytes)`);
      } else if (ctx.io.stdout.isTTY === true) {
        // On a terminal, as text through the escaping filter (a file's escape sequences stay inert).
        ctx.io.stdout.write(Buffer.from(bytes).toString('utf8'));
      } else (ctx.io.stdout as unknown as { write(b: Uint8Array): unknown }).write(bytes);
      return 0;
    }
    case 'put': {
      const [local, path] = rest;
      if (!local || !path || rest.length > 2) throw usage('give LOCAL (- for stdin) and PATH');
      const bytes =
        local === '-'
          ? await readStdin(ctx.io.stdin)
          : new Uint8Array(
              await readFile(local).catch((e) => {
                throw usage(`cannot read ${local}: ${(e as Error).message}`);
              }),
            );
      const r = await (await sandboxOps(ctx, id)).writeFile(id, path, bytes);
      if (ctx.json) ctx.printJson(r);
      else ctx.out(`${path}: ${r.size} bytes written`);
      return 0;
    }
    default:
      throw new ClientError('USAGE', `files: unknown action "${action}"; use ls, get or put`);
  }
};
