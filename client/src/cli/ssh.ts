// `agent-sandbox ssh add|remove|list|connect`: the owner's SSH keys on a sandbox, and the tunnel
// ssh runs as its ProxyCommand (stdin → the sandbox's sshd → stdout, through the operator API).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ClientError } from '../errors.ts';
import type { Command } from './commands.ts';

const KEY_START = /^(ssh-|ecdsa-|sk-)/;

/** A key given inline or as a .pub file; USAGE when it is neither. */
async function keyText(arg: string | undefined, action: string): Promise<string> {
  if (!arg) throw new ClientError('USAGE', `ssh ${action}: give the public key or its .pub file`);
  if (KEY_START.test(arg)) return arg;
  try {
    return (await readFile(arg, 'utf8')).trim();
  } catch {
    throw new ClientError('USAGE', `ssh ${action}: "${arg}" is neither a public key nor a readable file`);
  }
}

/** SHA256:… of a public key line, as ssh-keygen -l prints it. */
export function fingerprintOf(line: string): string {
  const b64 = line.trim().split(/\s+/)[1] ?? '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new ClientError('USAGE', 'that is not an SSH public key');
  const digest = createHash('sha256').update(Buffer.from(b64, 'base64')).digest('base64');
  return `SHA256:${digest.replace(/=+$/, '')}`;
}

export const ssh: Command = async (ctx) => {
  const [action, id, arg, ...extra] = ctx.args.positionals as [string, string, string?, ...string[]];
  if (extra.length) throw new ClientError('USAGE', `ssh ${action}: unexpected "${extra[0]}"`);
  const client = await ctx.operator(id);
  switch (action) {
    case 'add': {
      const r = await client.addSshKey(id, await keyText(arg, 'add'));
      if (ctx.json) ctx.printJson(r);
      else {
        ctx.out(`${r.key.fingerprint} added to ${id}`);
        ctx.note(`connect with: ssh -o ProxyCommand="agent-sandbox ssh connect %h" agent@${id}`);
      }
      return 0;
    }
    case 'remove': {
      const which = arg?.startsWith('SHA256:') ? arg : fingerprintOf(await keyText(arg, 'remove'));
      const r = await client.removeSshKey(id, which);
      if (ctx.json) ctx.printJson(r);
      else {
        ctx.out(`${which} removed from ${id}`);
        if (!r.enabled) ctx.note(`${id} has no SSH key left: SSH is off`);
      }
      return 0;
    }
    case 'list': {
      if (arg) throw new ClientError('USAGE', 'ssh list takes only the sandbox id');
      const r = await client.ssh(id);
      if (ctx.json) ctx.printJson(r);
      else if (r.keys.length === 0)
        ctx.note(`${id} has no SSH key: SSH is off (agent-sandbox ssh add ${id} KEY.pub)`);
      else for (const k of r.keys) ctx.out(`${k.fingerprint}\t${k.type}\t${k.comment}`);
      return 0;
    }
    case 'connect': {
      if (arg) throw new ClientError('USAGE', 'ssh connect takes only the sandbox id');
      const tunnel = await client.sshTunnel(id);
      const out = ctx.io.stdout as unknown as NodeJS.WritableStream;
      return new Promise<number>((resolve) => {
        const done = () => resolve(0);
        tunnel.on('close', done);
        tunnel.on('error', () => resolve(0));
        // The operator ended the tunnel (a revoked key, sign-out, the sandbox stopped): end here
        // too, or 'close' would wait for ssh to close our stdin, which it never does first.
        tunnel.on('end', () => {
          ctx.io.stdin.unpipe(tunnel);
          tunnel.destroy();
        });
        tunnel.pipe(out, { end: false });
        ctx.io.stdin.pipe(tunnel);
        ctx.io.stdin.on('end', () => tunnel.end());
        ctx.io.signal.addEventListener('abort', () => tunnel.destroy(), { once: true });
      });
    }
    default:
      throw new ClientError('USAGE', `ssh: unknown action "${action}"; use add, remove, list or connect`);
  }
};
