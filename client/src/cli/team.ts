// The sharing commands: `members` (team access) and `preview` (shareable preview links).
import { ClientError } from '../errors.ts';
import type { Command } from './commands.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export const members: Command = async (ctx) => {
  const [action, id, address, ...extra] = ctx.args.positionals as [string, string, string?, ...string[]];
  if (extra.length) throw new ClientError('USAGE', `members ${action}: unexpected "${extra[0]}"`);
  const client = await ctx.operator(id);
  let r: Awaited<ReturnType<typeof client.members>>;
  if (action === 'list') {
    if (address) throw new ClientError('USAGE', 'members list takes only the sandbox id');
    r = await client.members(id);
  } else if (action === 'add' || action === 'remove') {
    if (!address || !ADDRESS.test(address))
      throw new ClientError(
        'USAGE',
        `members ${action}: give the wallet address (0x followed by 40 hex digits)`,
      );
    r = action === 'add' ? await client.addMember(id, address) : await client.removeMember(id, address);
  } else {
    throw new ClientError('USAGE', `members: unknown action "${action}"; use add, remove or list`);
  }
  if (ctx.json) ctx.printJson(r);
  else if (action === 'list') {
    if (r.members.length === 0) ctx.note(`${id} has no members (owner ${r.owner})`);
    for (const m of r.members) ctx.out(m);
  } else ctx.out(`${address!.toLowerCase()} ${action === 'add' ? 'added to' : 'removed from'} ${id}`);
  return 0;
};

const wholeNumber = (v: unknown, flag: string, min: number, max: number): number | undefined => {
  if (v === undefined) return undefined;
  const n = /^\d+$/.test(String(v)) ? Number(v) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new ClientError('USAGE', `${flag} must be a whole number from ${min} to ${max}`);
  return n;
};

export const preview: Command = async (ctx) => {
  const [action, id, linkId] = ctx.args.positionals as [string, string, string?];
  const o = ctx.args.options;
  const client = await ctx.operator(id);
  switch (action) {
    case 'create': {
      if (linkId) throw new ClientError('USAGE', 'preview create takes the sandbox id and --port');
      const port = wholeNumber(o.port, '--port', 1, 65_535);
      if (port === undefined) throw new ClientError('USAGE', 'preview create: --port N is required');
      const link = await client.createPreviewLink(
        id,
        port,
        wholeNumber(o.expires, '--expires', 1, 31_536_000),
      );
      if (ctx.json) ctx.printJson(link);
      else {
        ctx.out(link.url ?? '');
        ctx.note(
          `link ${link.id} to port ${link.port}, until ${link.expires_at}; anyone with the URL can open it`,
        );
        ctx.note(`revoke it with: agent-sandbox preview revoke ${id} ${link.id}`);
      }
      return 0;
    }
    case 'list': {
      if (linkId) throw new ClientError('USAGE', 'preview list takes only the sandbox id');
      const links = await client.previewLinks(id);
      if (ctx.json) ctx.printJson(links);
      else if (links.length === 0) ctx.note(`${id} has no preview links`);
      else for (const l of links) ctx.out(`${l.id}\tport ${l.port}\t${l.state}\tuntil ${l.expires_at}`);
      return 0;
    }
    case 'revoke': {
      if (!linkId) throw new ClientError('USAGE', 'preview revoke: give the link id (see `preview list`)');
      const l = await client.revokePreviewLink(id, linkId);
      if (ctx.json) ctx.printJson(l);
      else ctx.out(`${l.id} revoked`);
      return 0;
    }
    default:
      throw new ClientError('USAGE', `preview: unknown action "${action}"; use create, list or revoke`);
  }
};
