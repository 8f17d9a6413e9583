// Caller's session id → the harness's own conversation id, kept in the agent's home (the workspace
// volume) so a follow-up turn still resumes after the container is recreated (`secrets set`, a
// restart). The file is read and written by a child running as the agent user: it is the user's
// own file, and the root sidecar never opens a path the user controls.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { SidecarConfig } from '../config.ts';
import { readAsAgent, writeAsAgent } from './agent-files.ts';
import { HARNESSES, type HarnessName } from './harness.ts';
import type { RunUsage } from './harness-events.ts';

export const SESSIONS_FILE = '.config/agent-sandbox/agent-sessions.json';
/** The newest sessions kept (the whole map is one argv string: at most ~90 KB, under Linux's 128 KiB). */
const MAX_SESSIONS = 200;
/** Only a plain id goes back into a harness's argv (never one that could read as a flag). */
export const HARNESS_SESSION_ID = /^[A-Za-z0-9][\w.:-]{0,199}$/;

export interface HarnessSession {
  harness: HarnessName;
  id: string;
  /** The conversation's usage so far, for a harness that reports running totals (CUMULATIVE_USAGE). */
  total?: RunUsage;
}

const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** A saved running total, if it is one (the file is the user's: anything else is dropped). */
function savedTotal(v: unknown): RunUsage | undefined {
  const u = v as Partial<Record<keyof RunUsage, unknown>> | null;
  if (!u || typeof u !== 'object' || !count(u.inputTokens) || !count(u.outputTokens)) return undefined;
  for (const k of ['cachedInputTokens', 'reasoningTokens'] as const)
    if (u[k] !== undefined && !count(u[k])) return undefined;
  return u as RunUsage;
}

export class SessionStore {
  readonly #map = new Map<string, HarnessSession>();
  #loaded: Promise<void> | undefined;
  readonly #file: string;

  constructor(
    private readonly config: Pick<SidecarConfig, 'agentHome' | 'uid' | 'gid'>,
    private readonly log: Logger,
  ) {
    this.#file = join(config.agentHome, SESSIONS_FILE);
  }

  async get(sessionId: string): Promise<HarnessSession | undefined> {
    await this.#load();
    return this.#map.get(sessionId);
  }

  async set(sessionId: string, s: HarnessSession): Promise<void> {
    await this.#load();
    this.#map.delete(sessionId);
    this.#map.set(sessionId, s);
    for (const k of this.#map.keys()) {
      if (this.#map.size <= MAX_SESSIONS) break;
      this.#map.delete(k);
    }
    const json = JSON.stringify(Object.fromEntries(this.#map));
    await writeAsAgent(this.config, this.#file, json).catch((e: Error) =>
      this.log.warn({ err: e.message }, 'could not save the agent sessions; kept in memory'),
    );
  }

  #load(): Promise<void> {
    this.#loaded ??= readAsAgent(this.config, this.#file)
      .then((text) => {
        if (text === undefined) return;
        const saved: unknown = JSON.parse(text);
        if (!saved || typeof saved !== 'object') return;
        for (const [k, v] of Object.entries(saved as Record<string, Partial<HarnessSession>>)) {
          // The file is the user's: anything but a known harness and a plain id is dropped.
          if (
            v &&
            typeof v.id === 'string' &&
            HARNESS_SESSION_ID.test(v.id) &&
            (HARNESSES as readonly string[]).includes(v.harness as string)
          ) {
            const total = savedTotal(v.total);
            this.#map.set(k, { harness: v.harness as HarnessName, id: v.id, ...(total ? { total } : {}) });
          }
        }
      })
      .catch(() => {});
    return this.#loaded;
  }
}
