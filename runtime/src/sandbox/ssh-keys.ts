// SSH public keys a sandbox's owner lets in (README "SSH into a sandbox"): parsed strictly, kept in
// the record (the encrypted store) as `type base64` with their SHA256 fingerprint, so they survive
// stop/resume, snapshots and operator restarts; the sidecar gets them with every tunnel.
// What reaches sshd is rebuilt from the decoded blob, never the text the user sent: no
// authorized_keys options (command=, from=, environment=), no second line, no comment.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';

export const MAX_SSH_KEYS = 16;
const MAX_KEY_TEXT = 16_384;
const TYPES = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);
const MIN_RSA_BITS = 2048;

export const SshKeySchema = z.object({
  /** `SHA256:<base64, unpadded>` as `ssh-keygen -l` prints it: how a key is named and removed. */
  fingerprint: z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/),
  type: z.string(),
  /** `type base64`: the one line sshd gets. */
  key: z.string(),
  /** The key's comment, printable ASCII only, for the owner's lists (never sent to sshd). */
  comment: z.string().max(100),
  addedAt: z.number().int(),
});
export type SshKey = z.infer<typeof SshKeySchema>;

/** Reads SSH wire strings (uint32 length + bytes) off a key blob. */
function wireStrings(blob: Buffer, n: number): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  for (let i = 0; i < n; i++) {
    if (off + 4 > blob.length) throw new Error('truncated');
    const len = blob.readUInt32BE(off);
    off += 4;
    if (off + len > blob.length) throw new Error('truncated');
    out.push(blob.subarray(off, off + len));
    off += len;
  }
  return out;
}

function bad(message: string): RuntimeError {
  return new RuntimeError('VALIDATION', message, { details: { field: 'ssh_public_key' } });
}

/** Parses one OpenSSH public key line (`type base64 [comment]`); VALIDATION with what to fix. */
export function parseSshKey(text: string, now: number): SshKey {
  if (typeof text !== 'string' || text.length === 0)
    throw bad('give an SSH public key (the line of a .pub file)');
  if (text.length > MAX_KEY_TEXT) throw bad(`an SSH public key is at most ${MAX_KEY_TEXT} characters`);
  const trimmed = text.trim();
  if (/[\r\n\0]/.test(trimmed)) throw bad('one SSH public key per request: the text has more than one line');
  const [type = '', b64 = '', ...rest] = trimmed.split(/[ \t]+/);
  if (!TYPES.has(type)) {
    throw bad(
      `"${type.slice(0, 40)}" is not an SSH public key type we accept (${[...TYPES].join(', ')}); authorized_keys options are not accepted`,
    );
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) throw bad('the key is not valid base64');
  const blob = Buffer.from(b64, 'base64');
  let parts: Buffer[];
  try {
    parts = wireStrings(blob, type === 'ssh-rsa' ? 3 : 1);
  } catch {
    throw bad('the key is truncated');
  }
  if (parts[0]!.toString('latin1') !== type) throw bad(`the key's data is not a ${type} key`);
  if (type === 'ssh-rsa') {
    const n = parts[2]!;
    const bits = (n.length - (n[0] === 0 ? 1 : 0)) * 8;
    if (bits < MIN_RSA_BITS)
      throw bad(`RSA keys must have at least ${MIN_RSA_BITS} bits; this one has ${bits}`);
  }
  const comment = rest
    .join(' ')
    .replace(/[^\x20-\x7e]/g, '')
    .slice(0, 100);
  const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  return { fingerprint, type, key: `${type} ${blob.toString('base64')}`, comment, addedAt: now };
}

function usable(ctx: SandboxContext, id: string): SandboxRecord {
  const r = ctx.records.get(id);
  if (!r || r.state === 'deleted') throw new RuntimeError('SANDBOX_NOT_FOUND', `no sandbox ${id}`);
  return r;
}

/** Adds a key (the same key twice is one); at most MAX_SSH_KEYS. Returns the key and the record. */
export async function addSshKey(
  ctx: SandboxContext,
  id: string,
  text: string,
): Promise<{ key: SshKey; record: SandboxRecord }> {
  const key = parseSshKey(text, ctx.now());
  const r = usable(ctx, id);
  const keys = r.sshKeys ?? [];
  const had = keys.find((k) => k.fingerprint === key.fingerprint);
  if (had) return { key: had, record: r };
  if (keys.length >= MAX_SSH_KEYS) {
    throw new RuntimeError('CONFLICT', `a sandbox has at most ${MAX_SSH_KEYS} SSH keys; remove one first`);
  }
  const record = await ctx.records.patch(id, (cur) => ({
    ...cur,
    sshKeys: [...(cur.sshKeys ?? []).filter((k) => k.fingerprint !== key.fingerprint), key],
    updatedAt: ctx.now(),
  }));
  return { key, record };
}

/**
 * Removes a key named by its fingerprint or given whole (its .pub line); NOT_FOUND when the
 * sandbox does not have it. The last key gone, SSH is off.
 */
export async function removeSshKey(ctx: SandboxContext, id: string, which: string): Promise<SandboxRecord> {
  const fingerprint = /^SHA256:/.test(which) ? which : parseSshKey(which, 0).fingerprint;
  const r = usable(ctx, id);
  if (!(r.sshKeys ?? []).some((k) => k.fingerprint === fingerprint)) {
    throw new RuntimeError('NOT_FOUND', `sandbox ${id} has no SSH key ${fingerprint}`);
  }
  return ctx.records.patch(id, (cur) => ({
    ...cur,
    sshKeys: (cur.sshKeys ?? []).filter((k) => k.fingerprint !== fingerprint),
    updatedAt: ctx.now(),
  }));
}
