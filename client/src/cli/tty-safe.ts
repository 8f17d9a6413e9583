// Text from a sandbox (an agent's answer, a command's output, fields of the sandbox's record) is
// shown escaped when it goes to a terminal: a control character or escape sequence in it would
// otherwise act on the owner's terminal — OSC 52 writes the clipboard (plant `curl … | sh` for
// the next paste), OSC 0 sets the title, OSC 8 makes links whose text lies about their target,
// CSI clears or redraws the screen to hide what was printed. Kept: \n and \t. Shown escaped:
// every other C0 control (ESC included, so no sequence at all survives: colours neither, since
// SGR can hide text as well as colour it, e.g. conceal or foreground = background), DEL, C1
// controls (U+0080–U+009F: 0x9B is CSI on terminals that take 8-bit controls) and the Unicode
// bidi overrides that reorder what is read. A \r is kept only as part of \r\n (written as \n):
// alone it moves back over the line just printed, so text can show one thing and then another.
// `terminal` is not filtered (it is a real terminal, like ssh), nor is anything under `--raw`.

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\x1b': '\\e', '\r': '\\r', '\b': '\\b', '\x07': '\\a' };

function show(c: string): string {
  const named = NAMED[c];
  if (named) return named;
  const n = c.charCodeAt(0);
  return n < 0x100 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
}

/** `text` with every control character but \n and \t shown escaped (\r\n becomes \n). */
export function escapeForTerminal(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE, show);
}

export interface TextSink {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

/**
 * A sink that escapes what it is given when `sink` is a terminal (else `sink` itself). Written
 * in pieces as output streams: a \r at the end of a piece waits for the next one, so a \r\n split
 * across two pieces is still a newline (a trailing lone \r is dropped: it would show nothing).
 */
export function terminalSafe(sink: TextSink): TextSink {
  if (sink.isTTY !== true) return sink;
  let heldCr = false;
  return {
    write(s: string): unknown {
      let text = (heldCr ? '\r' : '') + String(s);
      heldCr = text.endsWith('\r');
      if (heldCr) text = text.slice(0, -1);
      return text ? sink.write(escapeForTerminal(text)) : true;
    },
    get isTTY() {
      return sink.isTTY;
    },
    get columns() {
      return sink.columns;
    },
    get rows() {
      return sink.rows;
    },
  };
}
