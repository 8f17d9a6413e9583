// Polls a sidecar's unauthenticated GET /health (loopback port or Unix socket) until it answers 200, with a short
// first interval (the fast path matters: a local container is up in tens of milliseconds) that
// backs off, an overall deadline, and an optional early abort (the container died).
import http from 'node:http';

export interface HealthPollOptions {
  timeoutMs: number;
  intervalMs: number;
  maxIntervalMs: number;
  /** Rejects the wait early (e.g. the container exited); its reason becomes the failure. */
  abort?: Promise<string>;
}

/** Where the host reaches a sidecar: a loopback port, or a Unix socket (sandboxes without a network). */
export type SidecarAddress = { host: string; port: number } | { socketPath: string };

export function describeAddress(a: SidecarAddress): string {
  return 'socketPath' in a ? a.socketPath : `${a.host}:${a.port}`;
}

export type HealthResult = { ok: true; attempts: number } | { ok: false; reason: string; attempts: number };

// A fresh connection each probe: a keep-alive socket to a half-started server can hang.
const agent = new http.Agent({ keepAlive: false });

/** One GET /health; resolves true on HTTP 200 within `timeoutMs`. Never throws. */
export function probeHealth(addr: SidecarAddress, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ ...addr, path: '/health', agent, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.on('error', () => resolve(false));
  });
}

export async function waitForHealth(addr: SidecarAddress, opts: HealthPollOptions): Promise<HealthResult> {
  const deadline = Date.now() + opts.timeoutMs;
  let interval = opts.intervalMs;
  let attempts = 0;
  let aborted: string | undefined;
  opts.abort?.then(
    (reason) => {
      aborted = reason;
    },
    () => {},
  );
  while (true) {
    if (aborted !== undefined) return { ok: false, reason: aborted, attempts };
    const left = deadline - Date.now();
    if (left <= 0) break;
    attempts++;
    if (await probeHealth(addr, Math.min(left, 1000))) return { ok: true, attempts };
    if (aborted !== undefined) return { ok: false, reason: aborted, attempts };
    const wait = Math.min(interval, Math.max(0, deadline - Date.now()));
    if (wait <= 0) break;
    await new Promise((r) => setTimeout(r, wait));
    interval = Math.min(interval * 2, opts.maxIntervalMs);
  }
  return {
    ok: false,
    reason: `sidecar did not answer GET /health on ${describeAddress(addr)} within ${opts.timeoutMs} ms`,
    attempts,
  };
}
