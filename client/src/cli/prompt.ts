// `agent-sandbox prompt`: start (or follow) an agent run and print it as it streams; Ctrl-C
// cancels the run on the operator before exiting 130.
import { ClientError } from '../errors.ts';
import type { PromptRun, RunEvent } from '../operator-client.ts';
import { type Command, sandboxOps } from './commands.ts';
import type { CliContext } from './context.ts';

interface Part {
  id?: string;
  type?: string;
  text?: string;
  content?: string;
}

/** Turns the sidecar's part updates (deltas, or cumulative from older sidecars) into printable text. */
export class RunPrinter {
  private readonly seen = new Map<string, string>();
  private printedText = false;
  private endsWithNewline = true;
  error: { code?: string; message?: string } | undefined;
  cancelled = false;
  sessionId: string | undefined;

  constructor(private readonly ctx: Pick<CliContext, 'io' | 'note'>) {}

  private write(s: string): void {
    if (!s) return;
    this.ctx.io.stdout.write(s);
    this.printedText = true;
    this.endsWithNewline = s.endsWith('\n');
  }

  handle(ev: RunEvent): void {
    const data = (ev.data && typeof ev.data === 'object' ? ev.data : {}) as Record<string, unknown>;
    switch (ev.event) {
      case 'execution.started':
        if (typeof data.sessionId === 'string') this.sessionId = data.sessionId;
        return;
      case 'message.part.updated': {
        const part = (data.part ?? {}) as Part;
        const text = part.text ?? part.content ?? '';
        const key = part.id ?? part.type ?? 'part';
        const before = this.seen.get(key) ?? '';
        // Today's sidecar sends deltas (`delta: true`: the part's text is only what is new); older
        // ones sent the whole text so far: print what is new (all of it if it was rewritten).
        let delta: string;
        if (data.delta === true) {
          delta = text;
          this.seen.set(key, before + delta);
        } else {
          this.seen.set(key, text);
          delta = text.startsWith(before) ? text.slice(before.length) : `\n${text}`;
        }
        if (part.type === 'tool') {
          if (delta.trim()) this.ctx.note(`[tool] ${delta.trim()}`);
        } else if (part.type === 'reasoning') {
          // thinking is not the answer: keep stdout for the answer
        } else {
          this.write(delta);
        }
        return;
      }
      case 'result': {
        const final =
          typeof data.finalText === 'string'
            ? data.finalText
            : typeof data.response === 'string'
              ? data.response
              : '';
        if (!this.printedText && final) this.write(final);
        if (!this.endsWithNewline) this.write('\n');
        return;
      }
      case 'error':
      case 'run.failed':
        this.error = { code: data.code as string | undefined, message: data.message as string | undefined };
        return;
      case 'run.completed': {
        // The operator's own end-of-run record: print the answer if no part carried it.
        const final = typeof data.final_text === 'string' ? data.final_text : '';
        if (!this.printedText && final) this.write(final);
        if (this.printedText && !this.endsWithNewline) this.write('\n');
        return;
      }
      case 'run.cancelled':
        this.cancelled = true;
        return;
      default:
        return;
    }
  }
}

export const prompt: Command = async (ctx) => {
  const [id, ...words] = ctx.args.positionals as [string, ...string[]];
  const o = ctx.args.options;
  const timeout = o.timeout as string | undefined;
  if (timeout !== undefined && !/^\d+$/.test(timeout))
    throw new ClientError('USAGE', '--timeout must be milliseconds');
  if (o.tee === true && (typeof o.run === 'string' || typeof o['last-event-id'] === 'string')) {
    throw new ClientError(
      'USAGE',
      '--run/--last-event-id follow a run the operator recorded; a --tee run streams from the enclave only',
    );
  }
  let run: PromptRun;
  if (typeof o.run === 'string') {
    run = (await ctx.operator(id)).runHandle(id, { run_id: o.run });
  } else {
    const client = await sandboxOps(ctx, id);
    run = await client.prompt(id, words.join(' '), {
      ...(typeof o.session === 'string' ? { sessionId: o.session } : {}),
      ...(typeof o.backend === 'string' ? { backendType: o.backend } : {}),
      ...(typeof o.model === 'string' ? { model: o.model } : {}),
      ...(timeout ? { timeoutMs: Number(timeout) } : {}),
    });
    ctx.note(
      o.tee === true
        ? 'run in the enclave (streamed over the owner channel)'
        : `run ${run.runId}${run.sessionId ? ` (session ${run.sessionId})` : ''}`,
    );
  }
  const printer = new RunPrinter(ctx);
  const lastEventId = typeof o['last-event-id'] === 'string' ? o['last-event-id'] : undefined;
  for await (const ev of run.events({ signal: ctx.io.signal, ...(lastEventId ? { lastEventId } : {}) })) {
    if (ctx.json) {
      ctx.io.stdout.write(`${JSON.stringify(ev)}\n`);
      // Still track the outcome (failed/cancelled) for the exit code, printing nothing else.
      if (ev.event === 'error' || ev.event.startsWith('run.'))
        printer.handle({ ...ev, data: { ...(ev.data as object), final_text: undefined } });
    } else printer.handle(ev);
  }
  if (ctx.io.signal.aborted) {
    await run.cancel().catch(() => {});
    throw new ClientError('INTERRUPTED', `cancelled run ${run.runId}`);
  }
  if (printer.cancelled && !printer.error) {
    throw new ClientError('RUN_CANCELLED', `run ${run.runId} was cancelled (by another client?)`, {
      exitCode: 5,
    });
  }
  if (printer.error) {
    throw new ClientError(
      printer.error.code ?? 'REMOTE',
      `run ${run.runId} failed: ${printer.error.message ?? 'no message'}`,
      {
        exitCode: 5,
      },
    );
  }
  return 0;
};
