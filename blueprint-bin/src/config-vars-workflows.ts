// The workflow variables (run bounds), kept beside config-vars.ts and spread into its table, so the
// README's Configuration table lists them too.
import { z } from 'zod';
import type { Var } from './config-vars.ts';

const v = <S extends z.ZodType>(spec: Var<S>): Var<S> => spec;
const seconds = z
  .string()
  .trim()
  .regex(/^\d+$/, 'expected a whole number of seconds')
  .transform(Number)
  .refine((n) => n >= 1 && n <= 86_400, 'expected 1..86400 seconds');

export const WORKFLOW_VARIABLES = {
  WORKFLOW_DEFAULT_TIMEOUT: v({
    group: 'Operator API',
    schema: seconds,
    def: '600',
    doc: 'Seconds a workflow run (command or agent run) may take when its workflow_json states no timeout_ms; then it is stopped and recorded timed_out',
  }),
  WORKFLOW_MAX_TIMEOUT: v({
    group: 'Operator API',
    schema: seconds,
    def: '3600',
    doc: "Cap on a workflow's own timeout_ms (seconds)",
  }),
};
