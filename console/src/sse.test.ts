import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.ts';

describe('SseParser', () => {
  it('frames events across chunk boundaries, CRLF included, and skips comments and empty blocks', () => {
    const p = new SseParser();
    expect(p.push(': keep-alive\n\nid: 7\r\nevent: delta\r\ndata: he')).toEqual([]);
    expect(p.push('llo\r\ndata:world\r\n\r\n\n\nda')).toEqual([
      { id: '7', event: 'delta', data: 'hello\nworld' },
    ]);
    expect(p.push('ta: last\n\n')).toEqual([{ event: 'message', data: 'last' }]);
  });

  it('keeps an id-only block (it moves Last-Event-ID) and a field with no colon', () => {
    const p = new SseParser();
    expect(p.push('id: 9\n\ndata\n\n')).toEqual([
      { id: '9', event: 'message', data: '' },
      { event: 'message', data: '' },
    ]);
  });
});
