// Reads and validates the operator environment the blueprint manager sets (spec: tangle-protocol.md).
import { type Address, getAddress, isAddress } from 'viem';
import { z } from 'zod';
import { SdkError } from './errors.ts';

/** The validated operator environment. Ids are bigints because they are uint64 on chain. */
export interface BlueprintEnvironment {
  httpRpcUrl: string;
  /** WebSocket RPC; when set the producer subscribes to new heads instead of polling. */
  wsRpcUrl: string | undefined;
  /** Path of the keystore file or directory (default `./keystore`). */
  keystoreUri: string;
  dataDir: string;
  blueprintId: bigint;
  /** Absent in registration mode. */
  serviceId: bigint | undefined;
  tangleContract: Address;
  stakingContract: Address | undefined;
  statusRegistryContract: Address | undefined;
  protocol: 'tangle';
  testMode: boolean;
  keystorePassword: string | undefined;
  bridgeSocketPath: string | undefined;
  registrationModeOn: boolean;
  registrationCaptureOnly: boolean;
  registrationOutputPath: string | undefined;
}

type EnvSource = Record<string, string | undefined>;

const bool = z
  .string()
  .trim()
  .toLowerCase()
  .refine((s) => ['', '1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'].includes(s), {
    message: 'expected true/false (or 1/0, yes/no, on/off)',
  })
  .transform((s) => ['1', 'true', 'yes', 'on'].includes(s));
/** An env value that is a uint64 (decimal), as a bigint. Shared with the operator's config. */
export const envUint64 = z
  .string()
  .trim()
  .regex(/^\d+$/, 'expected a non-negative integer')
  .transform((s) => BigInt(s))
  .refine((n) => n < 2n ** 64n, 'does not fit in uint64');
/** An env value that is an EVM address, checksummed. Shared with the operator's config. */
export const envAddress = z
  .string()
  .trim()
  .refine((s) => isAddress(s, { strict: false }), 'expected a 0x-prefixed 20-byte address')
  .transform((s) => getAddress(s));
/** An env value that is a URL with one of `schemes` (e.g. 'http:'). Shared with the operator's config. */
export const envUrl = (...schemes: string[]) =>
  z
    .string()
    .trim()
    .refine(
      (s) => {
        try {
          return schemes.includes(new URL(s).protocol);
        } catch {
          return false;
        }
      },
      `expected a ${schemes.map((p) => p.replace(':', '://')).join(' or ')} URL`,
    );
const text = z.string().trim().min(1, 'must not be empty');

/**
 * Reads the environment (default `process.env`) and returns it validated. Every missing or
 * malformed variable is reported in ONE `SdkError('CONFIG')`, listed in the message and in
 * `details.problems`. Values are never echoed (a password may be among them).
 */
export function loadEnvironment(env: EnvSource = process.env): BlueprintEnvironment {
  const problems: Array<{ variable: string; problem: string }> = [];
  const raw = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v;
  };
  function read<T>(name: string, schema: z.ZodType<T>, required: boolean): T | undefined {
    const v = raw(name);
    if (v === undefined) {
      if (required) problems.push({ variable: name, problem: 'is required but not set' });
      return undefined;
    }
    const r = schema.safeParse(v);
    if (!r.success) {
      problems.push({ variable: name, problem: r.error.issues.map((i) => i.message).join('; ') });
      return undefined;
    }
    return r.data;
  }

  const registrationModeOn = read('REGISTRATION_MODE_ON', bool, false) ?? false;
  const registrationCaptureOnly = read('REGISTRATION_CAPTURE_ONLY', bool, false) ?? false;
  const out = {
    httpRpcUrl: read('HTTP_RPC_URL', envUrl('http:', 'https:'), true),
    wsRpcUrl: read('WS_RPC_URL', envUrl('ws:', 'wss:'), false),
    keystoreUri: read('KEYSTORE_URI', text, false) ?? './keystore',
    dataDir: read('DATA_DIR', text, true),
    blueprintId: read('BLUEPRINT_ID', envUint64, true),
    serviceId: read('SERVICE_ID', envUint64, !registrationModeOn),
    tangleContract: read('TANGLE_CONTRACT', envAddress, true),
    stakingContract: read('STAKING_CONTRACT', envAddress, false),
    statusRegistryContract: read('STATUS_REGISTRY_CONTRACT', envAddress, false),
    protocol: read('PROTOCOL', z.literal('tangle', { message: 'only "tangle" is supported' }), false),
    testMode: read('TEST_MODE', bool, false) ?? false,
    // A password is taken verbatim (no trim): spaces may be part of it.
    keystorePassword: env['KEYSTORE_PASSWORD'] === '' ? undefined : env['KEYSTORE_PASSWORD'],
    bridgeSocketPath: read('BRIDGE_SOCKET_PATH', text, false),
    registrationModeOn,
    registrationCaptureOnly,
    registrationOutputPath: read('REGISTRATION_OUTPUT_PATH', text, registrationCaptureOnly),
  };
  if (problems.length > 0) {
    const list = problems.map((p) => `  - ${p.variable} ${p.problem}`).join('\n');
    throw new SdkError(
      'CONFIG',
      `The operator environment is invalid (${problems.length} problem${problems.length > 1 ? 's' : ''}); ` +
        `set or fix these variables and restart:\n${list}`,
      { details: { problems } },
    );
  }
  return { ...out, protocol: 'tangle' } as BlueprintEnvironment;
}
