// Hands the sandbox user's env (base config + secrets) to a freshly started sidecar over its
// authenticated PUT /env. The sidecar keeps it in memory for the agent's children only, so no
// user value is ever in the container's config (seen by tini and the root sidecar, and captured
// by `docker commit`). Every start of a container goes through here before the sandbox is ready.
// A claimed warm-pool container still starts on the pool's bootstrap token (its config's): the
// delivery authenticates with that one and hands the sidecar the sandbox's own in the same request.
import http from 'node:http';
import type { SidecarAddress } from '../docker/health.ts';
import { RuntimeError } from '../errors.ts';
import { mergeEnv } from './env.ts';
import type { SandboxRecord } from './record.ts';

const agent = new http.Agent({ keepAlive: false });

export async function deliverUserEnv(
  addr: SidecarAddress,
  rec: Pick<SandboxRecord, 'token' | 'baseEnv' | 'userEnv'>,
  timeoutMs: number,
  /** The token the sidecar started with when it is not rec.token (a claimed pool container). */
  containerToken?: string | null,
): Promise<void> {
  const rotate = !!containerToken && containerToken !== rec.token;
  const env = mergeEnv(rec.baseEnv, rec.userEnv);
  const body = JSON.stringify(rotate ? { env, token: rec.token } : { env });
  const status = await new Promise<{ code: number; text: string }>((resolve, reject) => {
    const req = http.request(
      {
        ...addr,
        path: '/env',
        method: 'PUT',
        agent,
        timeout: timeoutMs,
        headers: {
          authorization: `Bearer ${rotate ? containerToken : rec.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  }).catch((e: unknown) => {
    throw new RuntimeError(
      'PROVISION_FAILED',
      `could not hand the sandbox env to its sidecar: ${(e as Error).message}`,
      { cause: e },
    );
  });
  if (status.code !== 200) {
    // The sidecar's error names a key at most, never a value.
    throw new RuntimeError(
      'PROVISION_FAILED',
      `the sidecar refused the sandbox env (HTTP ${status.code}): ${status.text.slice(0, 300)}`,
    );
  }
}
