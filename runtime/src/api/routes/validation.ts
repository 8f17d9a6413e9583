// The validation hook every route shares: a failed zod check becomes a VALIDATION error naming the
// offending fields (never echoing their values, which may be secrets).
import type { Hook } from '@hono/zod-openapi';
import { RuntimeError } from '../../errors.ts';
import type { ApiEnv } from '../context.ts';

export function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.map(String).join('.');
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}

// biome-ignore lint/suspicious/noExplicitAny: the hook is shared by routes of every input type
export const validationHook: Hook<any, ApiEnv, any, any> = (result) => {
  if (!result.success) {
    const issues = (result.error as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues;
    throw new RuntimeError('VALIDATION', `invalid request: ${describeIssues(issues)}`);
  }
};
