// The nftables side of per-sandbox network policies. Policed sandboxes sit on a bridge of their
// own (asbx-policy, network.ts); two kinds of table act on it:
// - one shared, fail-closed table (SHARED_TABLE, made by whichever operator comes first, never
//   flushed by one): anything a sandbox on that bridge sends is rejected unless an operator's table
//   marked it as allowed (new connections to the host, to other sandboxes, to any address), so a
//   sandbox whose operator has no rule for it (not yet, or any more) reaches nothing;
// - one table per operator (tableName(operatorId)), whose rules are keyed by each sandbox's MAC
//   address (set by the operator at container create, which the sandbox cannot change without
//   CAP_NET_ADMIN, so the rules exist before the container runs and hold across its restarts):
//   every DNS packet it sends, to any address, is marked and redirected to that sandbox's own
//   resolver (resolver.ts); a packet it forwards is marked allowed only when the destination is
//   in the sandbox's set (what its resolver answered for allowed names) and is not a private,
//   CGNAT, link-local, loopback or metadata address (NON_PUBLIC_V4), whatever the set holds.
// Both only reject or mark: accepting in one nftables base chain never lets a packet past another
// (Docker's, or the operator's egress chains), so a policy can only narrow what the host allows.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { NON_PUBLIC_V4 } from '../../docker/egress-rules.ts';
import { RuntimeError } from '../../errors.ts';

const run = promisify(execFile);

/** The bridge interface policed sandboxes join (network.ts). */
export const POLICY_BRIDGE = 'asbx-policy';
/** The shared fail-closed table (every operator's sandboxes on POLICY_BRIDGE). */
export const SHARED_TABLE = 'asbx_policy_net';
/** Packet mark bits: FWD = an operator allowed this forwarded packet, DNS = a redirected DNS query. */
export const MARK_FWD = 0x01000000;
export const MARK_DNS = 0x02000000;

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

/** This operator's table (a hash of its id: nftables names are short, ids are not). */
export function tableName(operatorId: string): string {
  return `asbx_pol_${createHash('sha256').update(operatorId).digest('hex').slice(0, 10)}`;
}

/** The set of addresses sandbox `id` may reach (filled by its resolver). */
export function setName(sandboxId: string): string {
  return `a_${sandboxId.replace(/^sbx-/, '').slice(0, 24)}`;
}

/** The MAC address a policed sandbox's container gets: locally administered, from its id. */
export function sandboxMac(sandboxId: string): string {
  const b = createHash('sha256').update(`asbx-mac:${sandboxId}`).digest().subarray(0, 5);
  return ['02', ...[...b].map((x) => x.toString(16).padStart(2, '0'))].join(':');
}

/** One policed sandbox whose rules are in force: its MAC and where its resolver listens. */
export interface PolicedSandbox {
  id: string;
  mac: string;
  resolver: { host: string; port: number };
}

/** The shared table's definition (idempotent: `add` leaves an existing table and chains as they are). */
export function sharedTableScript(): string {
  const reject = 'reject with icmpx type admin-prohibited';
  return [
    `add table inet ${SHARED_TABLE}`,
    `add chain inet ${SHARED_TABLE} p_fwd { type filter hook forward priority 10; policy accept; }`,
    `add chain inet ${SHARED_TABLE} p_in { type filter hook input priority 10; policy accept; }`,
    `flush chain inet ${SHARED_TABLE} p_fwd`,
    `flush chain inet ${SHARED_TABLE} p_in`,
    `add rule inet ${SHARED_TABLE} p_fwd iifname "${POLICY_BRIDGE}" ct state established,related accept`,
    `add rule inet ${SHARED_TABLE} p_fwd iifname "${POLICY_BRIDGE}" meta mark & ${hex(MARK_FWD)} != ${hex(MARK_FWD)} ${reject}`,
    `add rule inet ${SHARED_TABLE} p_in iifname "${POLICY_BRIDGE}" ct state established,related accept`,
    `add rule inet ${SHARED_TABLE} p_in iifname "${POLICY_BRIDGE}" meta mark & ${hex(MARK_DNS)} != ${hex(MARK_DNS)} ${reject}`,
    '',
  ].join('\n');
}

/**
 * This operator's table for the sandboxes in force: their sets are added (kept when they exist,
 * so what they resolved survives a rebuild), `dropSets` deleted, and the chains replaced in one
 * transaction.
 */
export function operatorTableScript(
  operatorId: string,
  sandboxes: readonly PolicedSandbox[],
  dropSets: readonly string[] = [],
): string {
  const t = tableName(operatorId);
  const nonPublic = `{ ${NON_PUBLIC_V4.join(', ')} }`;
  const lines = [
    `add table inet ${t}`,
    `add chain inet ${t} p_mark { type filter hook prerouting priority -160; policy accept; }`,
    `add chain inet ${t} p_dns { type nat hook prerouting priority -110; policy accept; }`,
    `add chain inet ${t} p_fwd { type filter hook forward priority -10; policy accept; }`,
    `flush chain inet ${t} p_mark`,
    `flush chain inet ${t} p_dns`,
    `flush chain inet ${t} p_fwd`,
  ];
  for (const s of sandboxes) lines.push(`add set inet ${t} ${setName(s.id)} { type ipv4_addr; }`);
  for (const name of dropSets) lines.push(`delete set inet ${t} ${name}`);
  for (const s of sandboxes) {
    const from = `iifname "${POLICY_BRIDGE}" ether saddr ${s.mac}`;
    const dns = `${from} meta l4proto { tcp, udp } th dport 53`;
    lines.push(`add rule inet ${t} p_mark ${dns} meta mark set meta mark | ${hex(MARK_DNS)}`);
    lines.push(`add rule inet ${t} p_dns ${dns} dnat ip to ${s.resolver.host}:${s.resolver.port}`);
    lines.push(
      `add rule inet ${t} p_fwd ${from} ip daddr != ${nonPublic} ip daddr @${setName(s.id)} meta mark set meta mark | ${hex(MARK_FWD)}`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

/** Runs an nft script as one transaction. */
export async function applyNft(script: string, nft = 'nft'): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      const child = execFile(nft, ['-f', '-'], { timeout: 15_000 }, (err) => (err ? reject(err) : resolve()));
      child.stdin?.end(script);
    });
  } catch (e) {
    const msg = (e as { stderr?: string }).stderr?.trim() || (e as Error).message;
    throw new RuntimeError(
      'EGRESS_RULES',
      `cannot install the per-sandbox network policy rules (${msg}); the operator needs root and nftables (apt-get install nftables), or create sandboxes without a network policy`,
      { cause: e },
    );
  }
}

/** The sets this operator's table holds (none when the table is missing). */
export async function listSets(operatorId: string, nft = 'nft'): Promise<string[]> {
  const out = await run(nft, ['-j', 'list', 'table', 'inet', tableName(operatorId)], {
    timeout: 15_000,
  }).then(
    (r) => r.stdout,
    () => '',
  );
  if (!out) return [];
  const parsed = JSON.parse(out) as { nftables: Array<{ set?: { name: string } }> };
  return parsed.nftables.flatMap((x) => (x.set ? [x.set.name] : []));
}

/** The addresses in one sandbox's set (tests and diagnostics). */
export async function setElements(operatorId: string, sandboxId: string, nft = 'nft'): Promise<string[]> {
  const out = await run(nft, ['-j', 'list', 'set', 'inet', tableName(operatorId), setName(sandboxId)], {
    timeout: 15_000,
  }).then(
    (r) => r.stdout,
    () => '',
  );
  if (!out) return [];
  const parsed = JSON.parse(out) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
  return parsed.nftables.flatMap((x) => (x.set?.elem ?? []).map(String));
}

/** Removes this operator's table (everything of its policies); a missing table is fine. */
export async function deleteOperatorTable(operatorId: string, nft = 'nft'): Promise<void> {
  await run(nft, ['delete', 'table', 'inet', tableName(operatorId)], { timeout: 15_000 }).catch(() => {});
}
