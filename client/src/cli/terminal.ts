// `agent-sandbox terminal`: an interactive shell over the operator's terminal routes (with --tee,
// the enclave's own, over the owner channel) — raw-mode
// stdin goes to the PTY as input, window resizes follow SIGWINCH, PTY output streams to stdout.
// Leaves when the shell exits (its stream ends) or on Ctrl-] (0x1d), like telnet.
import { ClientError } from '../errors.ts';
import { type Command, sandboxOps } from './commands.ts';

const LEAVE = 0x1d; // Ctrl-]

export const terminal: Command = async (ctx) => {
  const id = ctx.args.positionals[0]!;
  const client = await sandboxOps(ctx, id);
  const { stdin, stdout } = ctx.io;
  const size = () => ({ cols: stdout.columns ?? 80, rows: stdout.rows ?? 24 });
  const cwd = ctx.args.options.cwd;
  const term = await client.createTerminal(id, { ...size(), ...(typeof cwd === 'string' ? { cwd } : {}) });
  const tid = term.terminalId;

  const ac = new AbortController();
  const onOuterAbort = () => ac.abort();
  ctx.io.signal.addEventListener('abort', onOuterAbort, { once: true });
  let failure: unknown;
  let leftByKey = false;

  // Input is sent strictly in order: each send waits for the previous one.
  let sending: Promise<void> = Promise.resolve();
  const onData = (chunk: Buffer | string) => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const leaveAt = buf.indexOf(LEAVE);
    const data = (leaveAt === -1 ? buf : buf.subarray(0, leaveAt)).toString('utf8');
    if (data) {
      sending = sending
        .then(() => client.terminalInput(id, tid, data))
        .catch((e) => {
          failure ??= e;
          ac.abort();
        });
    }
    if (leaveAt !== -1) {
      leftByKey = true;
      ac.abort();
    }
  };
  const onResize = () => {
    const { cols, rows } = size();
    client.resizeTerminal(id, tid, cols, rows).catch(() => {
      // a lost resize is cosmetic; the next one fixes it
    });
  };

  const raw = stdin.isTTY === true && typeof stdin.setRawMode === 'function';
  if (raw) stdin.setRawMode!(true);
  stdin.on('data', onData);
  stdin.resume();
  process.on('SIGWINCH', onResize);
  if (!raw) ctx.note(`[terminal ${tid}: stdin is not a terminal; Ctrl-] or end of input to leave]`);
  else ctx.note(`[terminal ${tid}: Ctrl-] to leave]`);
  const onEnd = () => {
    // Piped input ran out: let pending input reach the shell, then leave.
    void sending.then(() => setTimeout(() => ac.abort(), 200));
  };
  if (!raw) stdin.on('end', onEnd);

  try {
    for await (const text of client.terminalOutput(id, tid, ac.signal)) stdout.write(text);
  } catch (e) {
    failure ??= e;
  } finally {
    if (raw) stdin.setRawMode!(false);
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    stdin.pause();
    process.off('SIGWINCH', onResize);
    ctx.io.signal.removeEventListener('abort', onOuterAbort);
    await sending;
    await client.deleteTerminal(id, tid).catch(() => {});
  }
  ctx.note(`\r\n[terminal closed${leftByKey ? ' (Ctrl-])' : ''}]`);
  if (failure) throw failure;
  if (ctx.io.signal.aborted) throw new ClientError('INTERRUPTED', 'terminal interrupted');
  return 0;
};
