// Files in the agent's home, read and written by a child running as the agent user: the home is the
// user's, so the root sidecar never opens a path there itself (a symlink planted by the agent would
// otherwise make root read, overwrite or chown any file in the sandbox).
import type { SidecarConfig } from '../config.ts';
import { identity, runProcess } from '../exec/run-process.ts';

type Who = Pick<SidecarConfig, 'uid' | 'gid'>;

// The new content goes to a temporary file renamed over the old: a symlink there is replaced, not followed.
const WRITE =
  'umask 077 && mkdir -p -- "$(dirname -- "$1")" && printf %s "$2" > "$1.tmp" && mv -f -- "$1.tmp" "$1"';

function asAgent(who: Who, argv: string[]) {
  return runProcess({
    argv,
    cwd: '/',
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    ...identity(who.uid, who.gid),
    timeoutMs: 10_000,
    outputLimitBytes: 1 << 20,
  });
}

/** The file's text, or undefined when the agent user cannot read it. */
export async function readAsAgent(who: Who, path: string): Promise<string | undefined> {
  const r = await asAgent(who, ['cat', '--', path]).catch(() => undefined);
  return r && r.exitCode === 0 ? r.stdout : undefined;
}

/** Writes `text` (at most ~120 KB: it is one argv string) as the agent user, mode 0600; throws on failure. */
export async function writeAsAgent(who: Who, path: string, text: string): Promise<void> {
  const r = await asAgent(who, ['sh', '-c', WRITE, 'sh', path, text]);
  if (r.exitCode !== 0) throw new Error(`could not write ${path}: ${r.stderr.trim().slice(0, 300)}`);
}
