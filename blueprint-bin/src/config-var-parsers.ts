// The value parsers and the variable-spec type shared by the operator's variable tables
// (config-vars.ts, config-vars-sandbox.ts, config-vars-tee.ts).

import { envUrl } from '@agent-sandbox/sdk';
import { z } from 'zod';

export type Command =
  | 'run'
  | 'register'
  | 'keys'
  | 'status'
  | 'devnet'
  | 'deploy-blueprint'
  | 'stake'
  | 'requests'
  | 'unregister';

// ── value parsers (string in, typed value out; messages never echo the value) ─────────────────
export const text = z.string().trim().min(1, 'must not be empty');
export const bool = z
  .string()
  .trim()
  .toLowerCase()
  .refine((s) => ['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'].includes(s), 'expected true or false')
  .transform((s) => ['1', 'true', 'yes', 'on'].includes(s));
export const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'expected a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected a number from ${min} to ${max}`);
export const num = (min: number) =>
  z
    .string()
    .trim()
    .refine((s) => s !== '' && Number.isFinite(Number(s)), 'expected a number')
    .transform(Number)
    .refine((n) => n >= min, `expected a number >= ${min}`);
export const url = (...schemes: string[]) => envUrl(...schemes).transform((s) => s.replace(/\/+$/, ''));
export const list = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);
export const labels = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .refine(
    (xs) => xs.every((x) => /^[a-zA-Z0-9._/-]+=[^,]*$/.test(x)),
    'expected key=value pairs separated by commas',
  )
  .transform((xs) =>
    Object.fromEntries(xs.map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)])),
  );
export const ports = list
  .refine(
    (xs) => xs.every((x) => /^\d+$/.test(x) && Number(x) >= 1 && Number(x) <= 65535),
    'expected port numbers 1-65535 separated by commas',
  )
  .transform((xs) => [...new Set(xs.map(Number))])
  .refine((xs) => xs.length <= 8, 'at most 8 ports');
export const secretHex = z
  .string()
  .trim()
  .regex(
    /^(0x)?[0-9a-fA-F]{64}$/,
    'must be 32 bytes as 64 hex characters (generate one: openssl rand -hex 32)',
  );

export type Group = 'Chain and keys' | 'Jobs' | 'Operator' | 'Operator API' | 'Sandboxes' | 'TEE';

export interface Var<S extends z.ZodType = z.ZodType> {
  group: Group;
  schema: S;
  /** Raw default applied when unset (parsed like a set value). */
  def?: string;
  /** How the README shows a computed default. */
  defaultDoc?: string;
  /** Commands for which the variable must be set. */
  requiredFor?: readonly Command[];
  /** Never echoed (it is not anyway) and marked in the table. */
  secret?: boolean;
  doc: string;
}

export const v = <S extends z.ZodType>(spec: Var<S>): Var<S> => spec;
