// Team access: the member wallets of a sandbox, kept in its record (the encrypted store), so they
// survive an operator restart. Only the owner's API session reaches these (the API checks that).
import { RuntimeError } from '../errors.ts';
import type { SandboxContext } from './context.ts';
import { MAX_MEMBERS, type SandboxRecord } from './record.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The address lowercased; VALIDATION when it is not a 20-byte hex address. */
export function memberAddress(address: string): string {
  if (typeof address !== 'string' || !ADDRESS.test(address)) {
    throw new RuntimeError('VALIDATION', 'a member is a wallet address: 0x followed by 40 hex digits');
  }
  return address.toLowerCase();
}

export function isMember(r: SandboxRecord, address: string): boolean {
  const a = address.toLowerCase();
  return (r.members ?? []).includes(a);
}

function usable(ctx: SandboxContext, id: string): SandboxRecord {
  const r = ctx.records.get(id);
  if (!r || r.state === 'deleted') throw new RuntimeError('SANDBOX_NOT_FOUND', `no sandbox ${id}`);
  return r;
}

/** Adds a member (idempotent); the owner cannot be one, and a sandbox has at most MAX_MEMBERS. */
export async function addMember(ctx: SandboxContext, id: string, address: string): Promise<SandboxRecord> {
  const a = memberAddress(address);
  const r = usable(ctx, id);
  if (r.owner.toLowerCase() === a) {
    throw new RuntimeError(
      'VALIDATION',
      'the owner already has every right on the sandbox; add another wallet',
    );
  }
  if (isMember(r, a)) return r;
  if ((r.members ?? []).length >= MAX_MEMBERS) {
    throw new RuntimeError('CONFLICT', `a sandbox has at most ${MAX_MEMBERS} members; remove one first`);
  }
  return ctx.records.patch(id, (cur) => ({
    ...cur,
    members: [...(cur.members ?? []).filter((m) => m !== a), a],
    updatedAt: ctx.now(),
  }));
}

/** Removes a member; NOT_FOUND when the wallet is not one. */
export async function removeMember(ctx: SandboxContext, id: string, address: string): Promise<SandboxRecord> {
  const a = memberAddress(address);
  const r = usable(ctx, id);
  if (!isMember(r, a)) throw new RuntimeError('NOT_FOUND', `${a} is not a member of sandbox ${id}`);
  return ctx.records.patch(id, (cur) => ({
    ...cur,
    members: (cur.members ?? []).filter((m) => m !== a),
    updatedAt: ctx.now(),
  }));
}
