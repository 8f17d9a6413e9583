// Loads the devnet description the devnet package (devnet/) writes (chain, contract addresses, service ids,
// funded dev accounts) so the CLI can fill --rpc/--tangle/--service/keys from one file.
import { readFile } from 'node:fs/promises';
import { isAddress, isHex } from 'viem';
import { z } from 'zod';
import { ClientError } from './errors.ts';

const Address = z.string().refine((s) => isAddress(s, { strict: false }), 'not an address');
const Uint = z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/)]).transform((v) => BigInt(v));

const DevnetAccount = z.looseObject({
  address: Address,
  // Dev keys only: the devnet's accounts are anvil's well-known test keys.
  privateKey: z.string().refine((s) => isHex(s) && s.length === 66, 'not a 32-byte hex private key'),
});

export const DevnetFile = z.looseObject({
  chainId: z.number().int().positive(),
  rpcUrl: z.url(),
  contracts: z.looseObject({ tangle: Address }).catchall(z.unknown()),
  services: z.record(z.string(), Uint).default({}),
  accounts: z.record(z.string(), DevnetAccount).default({}),
});
export type DevnetFile = z.infer<typeof DevnetFile>;

export interface Devnet {
  chainId: number;
  rpcUrl: string;
  tangle: `0x${string}`;
  /** The cloud-mode blueprint service manager, when deployed. */
  blueprint: `0x${string}` | undefined;
  /** The cloud-mode service id, when one was created. */
  serviceId: bigint | undefined;
  accounts: Record<string, { address: `0x${string}`; privateKey: `0x${string}` }>;
  /** Operator API URLs the devnet advertises, when it writes any. */
  operatorUrls: string[];
  raw: DevnetFile;
}

/** Reads and validates a devnet JSON file; every problem names the file and the field. */
export async function loadDevnet(path: string): Promise<Devnet> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new ClientError(
      'USAGE',
      `cannot read devnet file ${path} (${(e as NodeJS.ErrnoException).code ?? e}); start the devnet or fix --devnet`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ClientError('USAGE', `devnet file ${path} is not JSON`);
  }
  const parsed = DevnetFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ClientError(
      'USAGE',
      `devnet file ${path}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  const d = parsed.data;
  const cloud = d.contracts.cloud;
  const operatorUrls: string[] = [];
  // The devnet may list operators with their API URLs; accept the shapes a script would write.
  const ops = (d as Record<string, unknown>).operators;
  if (Array.isArray(ops)) {
    for (const o of ops) {
      const url =
        (o as Record<string, unknown> | null)?.apiUrl ?? (o as Record<string, unknown> | null)?.api_url;
      if (typeof url === 'string') operatorUrls.push(url);
    }
  }
  const single = (d as Record<string, unknown>).operatorApiUrl;
  if (typeof single === 'string') operatorUrls.push(single);
  return {
    chainId: d.chainId,
    rpcUrl: d.rpcUrl,
    tangle: d.contracts.tangle as `0x${string}`,
    blueprint:
      typeof cloud === 'string' && isAddress(cloud, { strict: false }) ? (cloud as `0x${string}`) : undefined,
    serviceId: d.services.cloud,
    accounts: Object.fromEntries(
      Object.entries(d.accounts).map(([k, v]) => [
        k,
        { address: v.address as `0x${string}`, privateKey: v.privateKey as `0x${string}` },
      ]),
    ),
    operatorUrls,
    raw: d,
  };
}
