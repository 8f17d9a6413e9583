// Configuration of the operator API: one zod schema with documented defaults, validated once.
import { z } from 'zod';

const perMinute = z.number().int().positive();

export const ApiConfigSchema = z.object({
  /** Origins allowed by CORS (CORS_ALLOWED_ORIGINS, comma-separated). Empty: no CORS headers. */
  corsAllowedOrigins: z.array(z.string().min(1)).default([]),
  /** Peers whose X-Forwarded-For is believed (exact IPs or IPv4 CIDRs). Empty: never. */
  trustedProxies: z.array(z.string().min(1)).default([]),
  /** Requests per client IP per sliding window, by route class. */
  rateLimits: z
    .object({
      auth: perMinute.default(10),
      write: perMinute.default(30),
      read: perMinute.default(120),
      terminal: perMinute.default(2400),
      /** /health, /readyz, /metrics: a load balancer or scraper polls a few times a minute. */
      probe: perMinute.default(60),
      windowMs: z.number().int().positive().default(60_000),
    })
    .prefault({}),
  /**
   * How long a /health check result is reused (5 s): each check is one chain read, one engine ping,
   * so the checks run at most once per period whatever the request rate (concurrent calls share one).
   */
  healthCacheMs: z.number().int().nonnegative().default(5_000),
  /**
   * METRICS_TOKEN: when set, /metrics needs `Authorization: Bearer <it>` and shows every series
   * (per-sandbox token usage included), and /health shows the instance's sandbox id and last
   * error to it. Unset: /metrics is public without per-sandbox series.
   */
  metricsToken: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  /** Largest request body in bytes (1 MiB). */
  bodyLimit: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** POST …/secrets may carry 256 values of 64 KiB each plus keys and JSON framing. */
  secretsBodyLimit: z
    .number()
    .int()
    .positive()
    .default(256 * (64 * 1024 + 512) + 4096),
  /** PUT …/files/content: the sidecar's file size limit (16 MiB); larger files are refused (413). */
  filesBodyLimit: z
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  /**
   * PREVIEW_ORIGIN: where port previews are served, `http(s)://*.<domain>[:port]`, one host per
   * sandbox port (previews/preview-origin.ts). Unset: `http://*.localhost:<port>` for an operator
   * reached on a loopback host, and previews refused elsewhere.
   */
  previewOrigin: z.string().min(1).optional(),
  /** Lifetime of a port-preview cookie (POST …/previews), 10 minutes; never past its session. */
  previewTtlMs: z
    .number()
    .int()
    .positive()
    .default(10 * 60_000),
  /**
   * Shareable preview links (POST …/preview-links): off unless the operator enables them
   * (PREVIEW_LINKS). Anyone with a link reaches that one port until it expires or is revoked.
   */
  previewLinks: z
    .object({
      enabled: z.boolean().default(false),
      /** A link's lifetime when the owner names none (24 h). */
      defaultTtlMs: z
        .number()
        .int()
        .positive()
        .default(24 * 3600_000),
      /** The longest lifetime an owner may ask for (7 days). */
      maxTtlMs: z
        .number()
        .int()
        .positive()
        .default(7 * 24 * 3600_000),
      /** Requests per link per minute, whoever sends them (the per-IP limits apply as well). */
      requestsPerMinute: perMinute.default(600),
    })
    .prefault({}),
  /**
   * SSH into sandboxes (routes/ssh.ts): owners add keys and tunnel over the API's WebSocket.
   * On unless the operator turns it off (SANDBOX_SSH=false); never in a TEE (the tee routes).
   */
  ssh: z.boolean().default(true),
  /** Whole-request timeout, streams excepted (120 s). */
  requestTimeoutMs: z.number().int().positive().default(120_000),
  /** Served over TLS (directly or by a terminating proxy): send HSTS. */
  tls: z.boolean().default(false),
  /** Stored agent-run events: per-run caps and retention (runs/run-log.ts). */
  runs: z
    .object({
      maxEvents: z.number().int().positive().default(10_000),
      maxBytes: z
        .number()
        .int()
        .positive()
        .default(8 * 1024 * 1024),
      maxTextChars: z
        .number()
        .int()
        .positive()
        .default(1024 * 1024),
      retentionMs: z
        .number()
        .int()
        .positive()
        .default(7 * 24 * 3600_000),
      /** How often finished-and-old runs and runs of deleted sandboxes are swept. */
      sweepIntervalMs: z.number().int().positive().default(600_000),
    })
    .prefault({}),
  /** Workflow runs: the timeout when a workflow states none, and the cap on what it states (ms). */
  workflows: z
    .object({
      defaultTimeoutMs: z.number().int().positive().default(600_000),
      maxTimeoutMs: z.number().int().positive().default(3_600_000),
    })
    .prefault({}),
  /** Sidecar operation timeouts (ms). */
  timeouts: z
    .object({
      exec: z.number().int().positive().default(30_000),
      agent: z.number().int().positive().default(600_000),
      task: z.number().int().positive().default(1_800_000),
      default: z.number().int().positive().default(60_000),
    })
    .prefault({}),
});

export type ApiConfig = z.infer<typeof ApiConfigSchema>;
export type ApiConfigInput = z.input<typeof ApiConfigSchema>;

export function parseApiConfig(input: ApiConfigInput | undefined): ApiConfig {
  return ApiConfigSchema.parse(input ?? {});
}

/** CORS_ALLOWED_ORIGINS / TRUSTED_PROXIES style lists: comma-separated, blanks dropped. */
export function parseList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
