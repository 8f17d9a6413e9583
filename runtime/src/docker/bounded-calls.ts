// A deadline on each short Docker call (ping, inspect, create, start, list, remove, exec create …),
// so an engine that accepts connections and never answers fails the call with ENGINE_TIMEOUT
// instead of hanging it. Streams and calls whose length is the work itself (commit, save/load,
// archives, attach, exec start, wait, events, build, pull, logs, prune) stay unbounded: a global
// dockerode timeout would cut them. Installed once per dockerode instance, on its modem's dial.
import type Docker from 'dockerode';

/** Paths whose call lasts as long as its work (matched on the path before the query string). */
const UNBOUNDED = [
  /\/commit$/,
  /\/containers\/[^/]+\/(wait|attach|archive|export|logs|stats)$/,
  /\/exec\/[^/]+\/start$/,
  /^\/events$/,
  /^\/build$/,
  /^\/images\/(load|create|get)$/,
  /^\/images\/[^/]+\/(get|push)$/,
  /\/prune$/,
];
/** Calls that wait for a container to stop: their own `t` (seconds) comes on top of the bound. */
const STOPPING = /\/containers\/[^/]+\/(stop|restart)$/;

/** A Docker call that got no answer within its deadline (the engine accepted and went silent). */
export class EngineTimeoutError extends Error {
  readonly code = 'ENGINE_TIMEOUT';
  constructor(
    readonly call: string,
    readonly timeoutMs: number,
  ) {
    super(`the Docker engine did not answer ${call} within ${timeoutMs} ms`);
    this.name = 'EngineTimeoutError';
  }
}

interface DialOptions {
  path: string;
  method: string;
  isStream?: boolean;
  hijack?: boolean;
  openStdin?: boolean;
  abortSignal?: AbortSignal;
  options?: { t?: number; _query?: { t?: number } } & Record<string, unknown>;
}
type Dial = (options: DialOptions, callback: (err: unknown, data: unknown) => void) => void;

const BOUNDED = Symbol('agent-sandbox.boundedCalls');

/** The deadline for one call in ms, or undefined when it is a stream or long by nature. */
export function callDeadline(o: DialOptions, timeoutMs: number): number | undefined {
  if (o.isStream || o.hijack || o.openStdin) return undefined;
  const path = o.path.split('?')[0] ?? '';
  if (UNBOUNDED.some((re) => re.test(path))) return undefined;
  if (STOPPING.test(path)) {
    const t = Number(o.options?.t ?? o.options?._query?.t ?? 10);
    return timeoutMs + (Number.isFinite(t) && t > 0 ? t * 1000 : 0);
  }
  return timeoutMs;
}

/**
 * Gives every short call on `docker` a deadline of `timeoutMs` (idempotent: a second install only
 * changes the bound). A caller's own abortSignal still works alongside.
 */
export function boundDockerCalls(docker: Docker, timeoutMs: number): void {
  const modem = docker.modem as unknown as { dial: Dial; [BOUNDED]?: { timeoutMs: number } };
  if (modem[BOUNDED]) {
    modem[BOUNDED].timeoutMs = timeoutMs;
    return;
  }
  const state = { timeoutMs };
  modem[BOUNDED] = state;
  const dial = modem.dial.bind(modem);
  modem.dial = (options, callback) => {
    const ms = callDeadline(options, state.timeoutMs);
    if (ms === undefined) return dial(options, callback);
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, ms);
    timer.unref();
    const call = `${options.method} ${options.path.split('?')[0]}`;
    const signals = options.abortSignal ? [options.abortSignal, ac.signal] : [ac.signal];
    dial({ ...options, abortSignal: AbortSignal.any(signals) }, (err, data) => {
      clearTimeout(timer);
      callback(err && timedOut ? new EngineTimeoutError(call, ms) : err, data);
    });
  };
}
