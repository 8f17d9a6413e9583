// The devnet's one JSON description (devnet.json): its shape, and writing, reading and liveness checks.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { rpcChainId } from './anvil.ts';
import { DevnetError } from './errors.ts';

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'an 0x address');
const privateKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a 32-byte hex key');
const id = z.number().int().nonnegative();
const account = z.strictObject({ address, privateKey, role: z.string().min(1) });
const kinds = <T extends z.ZodType>(t: T) =>
  z.strictObject({ cloud: t, instance: t, teeInstance: t, toy: t });

/** Schema of devnet.json: exactly these keys, nothing more. */
export const devnetInfoSchema = z.strictObject({
  chainId: z.number().int().positive(),
  rpcUrl: z.url(),
  wsUrl: z.url(),
  startedAt: z.iso.datetime(),
  contracts: z.strictObject({
    tangle: address,
    /** The staking contract operators stake in (LocalStaking on the stand-in, MultiAssetDelegation on a real one). */
    staking: address.optional(),
    cloud: address,
    instance: address,
    teeInstance: address,
    toy: address,
  }),
  blueprints: kinds(id),
  services: kinds(id),
  /** Set in the real-protocol mode: the Tangle is tnt-core's, loaded from an anvil state. */
  protocol: z
    .strictObject({
      source: z.literal('tnt-core'),
      commit: z.string().optional(),
      stateFile: z.string().min(1),
      deploymentFile: z.string().min(1),
    })
    .optional(),
  accounts: z.strictObject({
    deployer: account,
    operator1: account,
    operator2: account,
    serviceOwner: account,
    user: account,
  }),
});

type Hex = `0x${string}`;
type Parsed = z.infer<typeof devnetInfoSchema>;
type Account = { address: Hex; privateKey: Hex; role: string };

/** What a running devnet is: where to reach it, what is deployed, and which dev keys play which role. */
export interface DevnetInfo extends Omit<Parsed, 'contracts' | 'accounts' | 'protocol'> {
  protocol?: { source: 'tnt-core'; commit?: string | undefined; stateFile: string; deploymentFile: string };
  contracts: { [K in Exclude<keyof Parsed['contracts'], 'staking'>]: Hex } & { staking?: Hex };
  accounts: { [K in keyof Parsed['accounts']]: Account };
}

export type DevnetKind = keyof DevnetInfo['blueprints'];
export const DEVNET_KINDS: readonly DevnetKind[] = ['cloud', 'instance', 'teeInstance', 'toy'];

/** Writes devnet.json atomically (a reader never sees half a file). */
export function writeDevnetInfo(file: string, info: DevnetInfo): void {
  devnetInfoSchema.parse(info);
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  // The keys in it are anvil's public dev keys, not secrets; 0600 anyway, out of habit.
  writeFileSync(tmp, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Reads devnet.json; undefined when there is none, a clear error when it is not a devnet description. */
export function readDevnetInfo(file: string): DevnetInfo | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new DevnetError('STATE_INVALID', `${file} is not JSON; delete it and start the devnet again`, {
      cause: err,
    });
  }
  const parsed = devnetInfoSchema.safeParse(json);
  if (!parsed.success) {
    throw new DevnetError(
      'STATE_INVALID',
      `${file} is not a devnet description (${z.prettifyError(parsed.error)}); delete it and start again`,
    );
  }
  return parsed.data as DevnetInfo;
}

/** Removes devnet.json if it still describes `info` (another devnet may have replaced it since). */
export function removeDevnetInfo(file: string, info: DevnetInfo): void {
  try {
    const current = readDevnetInfo(file);
    if (current && current.rpcUrl === info.rpcUrl && current.startedAt === info.startedAt) rmSync(file);
  } catch {
    // an unreadable file is not ours to judge at shutdown
  }
}

/**
 * Whether the devnet `info` describes is up: its RPC answers with its chain id and every contract
 * it names has code (so a fresh anvil that took the same port does not pass for it).
 */
export async function isDevnetAlive(info: DevnetInfo): Promise<boolean> {
  if ((await rpcChainId(info.rpcUrl)) !== info.chainId) return false;
  const codes = await Promise.all(Object.values(info.contracts).map((a) => getCodeSize(info.rpcUrl, a)));
  return codes.every((n) => n > 0);
}

async function getCodeSize(rpcUrl: string, addr: string): Promise<number> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getCode', params: [addr, 'latest'] }),
      signal: AbortSignal.timeout(2000),
    });
    const body = (await res.json()) as { result?: string };
    return typeof body.result === 'string' ? (body.result.length - 2) / 2 : 0;
  } catch {
    return 0;
  }
}

/** Who keeps a devnet running: the foreground `up` process, or a detached anvil (devnet.pid). */
export interface DevnetPidRecord {
  pid: number;
  detached: boolean;
  rpcUrl: string;
  startedAt: string;
}

/** devnet.pid lives beside the state file; `down` reads it to know what to signal. */
export const devnetPidFile = (stateFile: string): string => resolve(stateFile, '../devnet.pid');

export function writeDevnetPid(stateFile: string, record: DevnetPidRecord): void {
  writeFileSync(devnetPidFile(stateFile), `${JSON.stringify(record)}\n`);
}

export function readDevnetPid(stateFile: string): DevnetPidRecord | undefined {
  try {
    return JSON.parse(readFileSync(devnetPidFile(stateFile), 'utf8')) as DevnetPidRecord;
  } catch {
    return undefined;
  }
}

export function removeDevnetPid(stateFile: string): void {
  rmSync(devnetPidFile(stateFile), { force: true });
}
