// Redaction of streamed run events: a secret split across two text deltas (as gemini streams its
// answer) is still redacted, the text around it arrives in order, and nothing is lost at the end.
import { describe, expect, it } from 'vitest';
import { StreamRedactor } from './redact.ts';
import { type AgentPart, RunStream } from './run-stream.ts';

const KEY = 'sk-test-0123456789abcdef0123';
const env = { GEMINI_API_KEY: KEY, SHORT_TOKEN: 'abc', PATH: '/usr/bin' };

/** gemini's stream-json lines through the real parser and the redactor; returns the parts emitted. */
function run(lines: object[]): AgentPart[] {
  const parts: AgentPart[] = [];
  const redactor = new StreamRedactor(env, (p) => parts.push(p));
  const stream = new RunStream('gemini', 'part_t', 1 << 20, (p) => redactor.part(p));
  for (const l of lines) stream.write(Buffer.from(`${JSON.stringify(l)}\n`));
  stream.end(true);
  redactor.flush();
  return parts;
}

const msg = (content: string) => ({ type: 'message', role: 'assistant', content, delta: true });
const text = (parts: AgentPart[]) =>
  parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');

describe('StreamRedactor', () => {
  it('passes on at once text that cannot be the start of a secret (a long-running agent is seen working)', () => {
    const parts: AgentPart[] = [];
    const redactor = new StreamRedactor(env, (p) => parts.push(p));
    redactor.part({ id: 'p1', type: 'text', text: 'started\n', content: 'started\n' });
    expect(text(parts)).toBe('started\n');
    // Only a tail that could grow into a secret waits for more text.
    redactor.part({ id: 'p1', type: 'text', text: `next ${KEY.slice(0, 4)}`, content: '' });
    expect(text(parts)).toBe('started\nnext ');
    redactor.flush();
    expect(text(parts)).toBe(`started\nnext ${KEY.slice(0, 4)}`);
  });

  it('redacts a secret split across two streamed text deltas', () => {
    const parts = run([msg(`my key is ${KEY.slice(0, 10)}`), msg(`${KEY.slice(10)} and that is all`)]);
    expect(JSON.stringify(parts)).not.toContain(KEY.slice(0, 10));
    expect(text(parts)).toBe('my key is [redacted:GEMINI_API_KEY] and that is all');
  });

  it('redacts a secret split over many one-character deltas, and keeps the text in order', () => {
    const whole = `a${KEY}b${KEY}c`;
    const parts = run([...whole].map(msg));
    expect(JSON.stringify(parts)).not.toContain(KEY.slice(0, 8));
    expect(text(parts)).toBe('a[redacted:GEMINI_API_KEY]b[redacted:GEMINI_API_KEY]c');
  });

  it('passes text before a tool call out before the call, and redacts tool input and output', () => {
    const parts = run([
      msg('I will run it. '),
      msg(KEY.slice(0, 5)),
      {
        type: 'tool_use',
        tool_id: 't1',
        tool_name: 'run_shell_command',
        parameters: { command: `echo ${KEY}` },
      },
      { type: 'tool_result', tool_id: 't1', status: 'success', output: `${KEY}\n` },
      msg('done'),
    ]);
    expect(JSON.stringify(parts)).not.toContain(KEY);
    const firstTool = parts.findIndex((p) => p.type === 'tool');
    expect(parts.slice(firstTool).map((p) => p.type)).toEqual(['tool', 'tool', 'text']);
    expect(text(parts.slice(0, firstTool))).toBe(`I will run it. ${KEY.slice(0, 5)}`);
    expect(JSON.stringify(parts[firstTool]!.tool?.input)).toContain('[redacted:GEMINI_API_KEY]');
    expect(text(parts)).toBe(`I will run it. ${KEY.slice(0, 5)}done`);
  });

  it('with no secrets in the env passes every delta on at once', () => {
    const parts: AgentPart[] = [];
    const r = new StreamRedactor({ PATH: '/bin' }, (p) => parts.push(p));
    r.part({ id: 'x', type: 'text', text: 'hi', content: 'hi', state: 'running' });
    expect(parts.map((p) => p.text)).toEqual(['hi']);
  });
});
