// The CLI's on-disk state under ~/.config/agent-sandbox/: session tokens keyed by operator URL +
// wallet address (a bearer credential: file mode 0600, directory 0700, never printed unless
// asked), and which operator serves which sandbox (public facts, so later commands find it).
import { chmod, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '@agent-sandbox/sdk/files';

export interface CachedSession {
  operator: string;
  address: string;
  token: string;
  /** Unix seconds; undefined when the operator did not say. */
  expiresAt: number | undefined;
}

interface SessionsFile {
  version: 1;
  sessions: Record<string, CachedSession>;
}

interface SandboxesFile {
  version: 1;
  sandboxes: Record<string, { operator: string; callId?: string; createdAt: string }>;
}

/** `AGENT_SANDBOX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agent-sandbox`, else `~/.config/agent-sandbox`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENT_SANDBOX_CONFIG_DIR) return env.AGENT_SANDBOX_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'agent-sandbox');
}

export function normalizeOperatorUrl(url: string): string {
  try {
    return new URL(url).toString().replace(/\/+$/, '');
  } catch {
    return url.replace(/\/+$/, '');
  }
}

function sessionKey(operator: string, address: string): string {
  return `${normalizeOperatorUrl(operator)}#${address.toLowerCase()}`;
}

async function readJson<T>(path: string, empty: T): Promise<T> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return empty;
    // A corrupt cache loses nothing that matters: sessions can be re-created by signing in.
    return empty;
  }
}

/**
 * Write to a new private temp file (sdk's writeFileAtomic: O_EXCL|O_NOFOLLOW, 0600), then rename:
 * readers never see half a file, others never read it, and nobody redirects it through a symlink.
 */
async function writePrivate(dir: string, path: string, value: unknown): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch(() => {});
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, 0o600);
}

export class SessionCache {
  readonly dir: string;
  private readonly sessionsPath: string;
  private readonly sandboxesPath: string;

  constructor(dir: string = configDir()) {
    this.dir = dir;
    this.sessionsPath = join(dir, 'sessions.json');
    this.sandboxesPath = join(dir, 'sandboxes.json');
  }

  get sessionsFile(): string {
    return this.sessionsPath;
  }

  private async sessions(): Promise<SessionsFile> {
    const f = await readJson<SessionsFile>(this.sessionsPath, { version: 1, sessions: {} });
    return f && typeof f.sessions === 'object' && f.sessions ? f : { version: 1, sessions: {} };
  }

  /**
   * The session for this operator and address; with no address, the only session cached for the
   * operator (undefined when there are none or several). Expired sessions are not returned.
   */
  async get(operator: string, address?: string): Promise<CachedSession | undefined> {
    const { sessions } = await this.sessions();
    const now = Math.floor(Date.now() / 1000);
    const live = (s: CachedSession | undefined) =>
      s && (s.expiresAt === undefined || s.expiresAt > now) ? s : undefined;
    if (address) return live(sessions[sessionKey(operator, address)]);
    const prefix = `${normalizeOperatorUrl(operator)}#`;
    const matches = Object.entries(sessions)
      .filter(([k]) => k.startsWith(prefix))
      .map(([, s]) => live(s))
      .filter((s): s is CachedSession => s !== undefined);
    return matches.length === 1 ? matches[0] : undefined;
  }

  async put(session: CachedSession): Promise<void> {
    const f = await this.sessions();
    f.sessions[sessionKey(session.operator, session.address)] = {
      ...session,
      operator: normalizeOperatorUrl(session.operator),
      address: session.address.toLowerCase(),
    };
    await writePrivate(this.dir, this.sessionsPath, f);
  }

  async remove(operator: string, address: string): Promise<boolean> {
    const f = await this.sessions();
    const key = sessionKey(operator, address);
    if (!(key in f.sessions)) return false;
    delete f.sessions[key];
    await writePrivate(this.dir, this.sessionsPath, f);
    return true;
  }

  /** Remembers which operator serves a sandbox (no secrets in this file). */
  async rememberSandbox(id: string, operator: string, callId?: bigint): Promise<void> {
    const f = await readJson<SandboxesFile>(this.sandboxesPath, { version: 1, sandboxes: {} });
    f.sandboxes ??= {};
    f.sandboxes[id] = {
      operator: normalizeOperatorUrl(operator),
      ...(callId === undefined ? {} : { callId: callId.toString() }),
      createdAt: new Date().toISOString(),
    };
    await writePrivate(this.dir, this.sandboxesPath, f);
  }

  async operatorFor(id: string): Promise<string | undefined> {
    const f = await readJson<SandboxesFile>(this.sandboxesPath, { version: 1, sandboxes: {} });
    return f.sandboxes?.[id]?.operator;
  }

  async forgetSandbox(id: string): Promise<void> {
    const f = await readJson<SandboxesFile>(this.sandboxesPath, { version: 1, sandboxes: {} });
    if (!f.sandboxes?.[id]) return;
    delete f.sandboxes[id];
    await writePrivate(this.dir, this.sandboxesPath, f);
  }
}
