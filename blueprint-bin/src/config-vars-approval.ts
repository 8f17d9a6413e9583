// The service-request approval policy `run` applies by itself (off by default), kept beside
// config-vars.ts and spread into its table, so the README's Configuration table lists them too.
import { z } from 'zod';
import { bool, int, list, v } from './config-var-parsers.ts';

const address = list.refine(
  (xs) => xs.every((x) => /^0x[0-9a-fA-F]{40}$/.test(x)),
  'expected 0x-prefixed addresses separated by commas',
);

export const APPROVAL_VARIABLES = {
  AUTO_APPROVE_REQUESTS: v({
    group: 'Operator',
    schema: bool,
    def: 'false',
    doc: 'Approve service requests naming this operator by itself when they are within the AUTO_APPROVE_* limits (off: every request waits for `requests approve`; a request outside the limits is logged and left for a human, never rejected)',
  }),
  AUTO_APPROVE_MAX_CPU_CORES: v({
    group: 'Operator',
    schema: int(0, 1024),
    def: '0',
    doc: 'Largest cpu_cores an instance request may ask for (0 = no limit)',
  }),
  AUTO_APPROVE_MAX_MEMORY_MB: v({
    group: 'Operator',
    schema: int(0, 4_194_304),
    def: '0',
    doc: 'Largest memory_mb an instance request may ask for (0 = no limit)',
  }),
  AUTO_APPROVE_MAX_DISK_GB: v({
    group: 'Operator',
    schema: int(0, 65_536),
    def: '0',
    doc: 'Largest disk_gb an instance request may ask for (0 = no limit)',
  }),
  AUTO_APPROVE_MAX_TTL_SECONDS: v({
    group: 'Operator',
    schema: int(0),
    def: '0',
    doc: 'Longest service ttl a request may ask for, seconds (0 = any; when set, a perpetual ttl 0 is outside it)',
  }),
  AUTO_APPROVE_MIN_PAYMENT_WEI: v({
    group: 'Operator',
    schema: z
      .string()
      .trim()
      .regex(/^\d+$/, 'expected a whole number of wei')
      .transform((s) => BigInt(s)),
    def: '0',
    doc: 'Least native payment (wei) a request must carry (0 = free requests pass)',
  }),
  AUTO_APPROVE_REQUESTERS: v({
    group: 'Operator',
    schema: address,
    defaultDoc: '(anyone)',
    doc: 'Only requests from these addresses (comma-separated) are approved by the policy',
  }),
  AUTO_APPROVE_INTERVAL_MS: v({
    group: 'Operator',
    schema: int(100, 3_600_000),
    def: '5000',
    doc: 'How often `run` reads the pending requests when AUTO_APPROVE_REQUESTS is on',
  }),
};
