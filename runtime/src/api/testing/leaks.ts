// Test helper: asserts that no response and no log line carried a sidecar token, a session token
// (in logs), a secret value or a stack trace.
import { expect } from 'vitest';
import type { Harness } from './harness.ts';

const STACK_RE = /\n\s+at .+:\d+:\d+|\.ts:\d+:\d+/;

export function assertNoLeaks(h: Harness, secrets: string[] = [], sessionTokens: string[] = []): void {
  const sidecarTokens = [...h.sandboxes.records.values()].map((r) => r.token);
  expect(h.transcripts.length).toBeGreaterThan(0);
  for (const t of h.transcripts) {
    for (const s of [...sidecarTokens, ...secrets]) expect(t.includes(s), 'secret in a response').toBe(false);
    expect(STACK_RE.test(t), `stack trace in a response: ${t.slice(0, 200)}`).toBe(false);
  }
  for (const line of h.logLines) {
    for (const s of [...sidecarTokens, ...secrets, ...sessionTokens]) {
      expect(line.includes(s), `secret in a log line: ${line.slice(0, 200)}`).toBe(false);
    }
  }
}
