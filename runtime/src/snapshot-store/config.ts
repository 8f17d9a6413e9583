// The object store snapshots may go to (SNAPSHOT_S3_*): any S3-compatible service, the operator's
// own bucket. Absent (no bucket): snapshots stay on local disk, as tar files in the snapshot dir.
import { z } from 'zod';
import { RuntimeError } from '../errors.ts';

export const SnapshotS3ConfigSchema = z.object({
  /** https://host[:port] of an S3-compatible service; empty: AWS S3's endpoint for the region. */
  endpoint: z.string().optional(),
  region: z.string().min(1).default('us-east-1'),
  bucket: z.string().min(3).max(63),
  /** Prepended to every object name (e.g. `agent-sandbox/`); names are otherwise opaque ids. */
  prefix: z
    .string()
    .max(200)
    .regex(/^[A-Za-z0-9/_.-]*$/, 'letters, digits and / _ . - only')
    .default('agent-sandbox/'),
  /** Both or neither; neither: the AWS SDK's default chain (AWS_* env, profile, instance role). */
  accessKeyId: z.string().min(1).optional(),
  secretAccessKey: z.string().min(1).optional(),
  /** Path-style addressing (`endpoint/bucket/key`), what most S3-compatible services want. */
  forcePathStyle: z.boolean().default(true),
  /** Plain http to the endpoint (refused by default: the requests and objects' metadata go in the clear). */
  allowHttp: z.boolean().default(false),
  /** Hosts that may be private, loopback or CGNAT addresses (a store on your own network). */
  allowPrivateHosts: z.array(z.string().min(1)).default([]),
  /** Multipart part size, bytes (at least S3's minimum of 5 MiB). */
  partSizeBytes: z
    .number()
    .int()
    .min(5 * 1024 * 1024)
    .default(8 * 1024 * 1024),
  /** Deadline of one request to the store without progress, ms. */
  requestTimeoutMs: z.number().int().positive().default(60_000),
});
export type SnapshotS3Config = z.infer<typeof SnapshotS3ConfigSchema>;
export type SnapshotS3ConfigInput = z.input<typeof SnapshotS3ConfigSchema>;

const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);

function bool(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw !== 'true' && raw !== 'false')
    throw new RuntimeError('VALIDATION', `${name} must be "true" or "false", got "${raw}"`);
  return raw === 'true';
}

/** SNAPSHOT_S3_* from the environment; undefined when SNAPSHOT_S3_BUCKET is unset (local snapshots). */
export function snapshotS3FromEnv(
  env: Record<string, string | undefined>,
): SnapshotS3ConfigInput | undefined {
  const bucket = env.SNAPSHOT_S3_BUCKET?.trim();
  if (!bucket) return undefined;
  const out: SnapshotS3ConfigInput = { bucket };
  const set = <K extends keyof SnapshotS3ConfigInput>(k: K, v: SnapshotS3ConfigInput[K] | undefined) => {
    if (v !== undefined && v !== '') out[k] = v;
  };
  set('endpoint', env.SNAPSHOT_S3_ENDPOINT?.trim());
  set('region', env.SNAPSHOT_S3_REGION?.trim());
  set('prefix', env.SNAPSHOT_S3_PREFIX?.trim());
  set('accessKeyId', env.SNAPSHOT_S3_ACCESS_KEY_ID?.trim());
  set('secretAccessKey', env.SNAPSHOT_S3_SECRET_ACCESS_KEY?.trim());
  set('forcePathStyle', bool('SNAPSHOT_S3_FORCE_PATH_STYLE', env.SNAPSHOT_S3_FORCE_PATH_STYLE));
  set('allowHttp', bool('SNAPSHOT_S3_ALLOW_HTTP', env.SNAPSHOT_S3_ALLOW_HTTP));
  const hosts = list(env.SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS);
  if (hosts.length) out.allowPrivateHosts = hosts;
  return out;
}

/** Checks the parts of the config that need no network; throws CONFIG_INVALID naming the variable. */
export function checkSnapshotS3Config(c: SnapshotS3Config): void {
  if (Boolean(c.accessKeyId) !== Boolean(c.secretAccessKey)) {
    throw new RuntimeError(
      'CONFIG_INVALID',
      'SNAPSHOT_S3_ACCESS_KEY_ID and SNAPSHOT_S3_SECRET_ACCESS_KEY go together: set both, or neither to use the AWS SDK default chain',
    );
  }
}
