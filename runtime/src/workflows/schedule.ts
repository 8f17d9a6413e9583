// Workflow triggers: `manual` (job 3 only) or `cron` (a standard 5-field expression in a stated IANA
// time zone, parsed by croner). The schedule's slots are computed here; nothing is parsed by hand.
import { Cron } from 'croner';
import { RuntimeError } from '../errors.ts';

export type Trigger = { type: 'manual' } | { type: 'cron'; expression: string; timezone: string };

const MAX_EXPRESSION = 128;

/**
 * Reads a workflow's trigger. `trigger_config` for `cron` is either the bare expression (time zone
 * UTC) or JSON `{"cron": "*\/5 * * * *", "timezone": "Europe/Berlin"}`. Throws VALIDATION, saying
 * what is accepted, for anything else.
 */
export function parseTrigger(type: string, config: string): Trigger {
  const t = type.trim().toLowerCase();
  if (t === '' || t === 'manual') return { type: 'manual' };
  if (t !== 'cron') {
    throw new RuntimeError(
      'VALIDATION',
      `trigger_type "${type.slice(0, 32)}" is not supported; use "manual" or "cron"`,
    );
  }
  let expression = config.trim();
  let timezone = 'UTC';
  if (expression.startsWith('{')) {
    let o: unknown;
    try {
      o = JSON.parse(expression);
    } catch {
      throw new RuntimeError(
        'VALIDATION',
        'trigger_config is not valid JSON; use {"cron": "<5 fields>", "timezone": "<IANA zone>"}',
      );
    }
    const r = (o ?? {}) as Record<string, unknown>;
    if (typeof r['cron'] !== 'string') {
      throw new RuntimeError(
        'VALIDATION',
        'trigger_config needs a "cron" string (5 fields, e.g. "*/5 * * * *")',
      );
    }
    expression = r['cron'].trim();
    if (r['timezone'] !== undefined) {
      if (typeof r['timezone'] !== 'string' || r['timezone'].trim() === '') {
        throw new RuntimeError(
          'VALIDATION',
          'trigger_config "timezone" must be an IANA zone name such as "UTC" or "Europe/Berlin"',
        );
      }
      timezone = r['timezone'].trim();
    }
  }
  if (expression === '' || expression.length > MAX_EXPRESSION) {
    throw new RuntimeError(
      'VALIDATION',
      'a cron workflow needs a 5-field expression in trigger_config (e.g. "0 * * * *")',
    );
  }
  if (expression.split(/\s+/).length !== 5) {
    throw new RuntimeError(
      'VALIDATION',
      `cron expression "${expression}" must have exactly 5 fields (minute hour day-of-month month day-of-week)`,
    );
  }
  try {
    Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new RuntimeError(
      'VALIDATION',
      `time zone "${timezone.slice(0, 64)}" is unknown; use an IANA zone name such as "UTC" or "Europe/Berlin"`,
    );
  }
  try {
    cron({ type: 'cron', expression, timezone });
  } catch (e) {
    throw new RuntimeError(
      'VALIDATION',
      `cron expression "${expression}" is invalid: ${e instanceof Error ? e.message : e}`,
    );
  }
  return { type: 'cron', expression, timezone };
}

const cron = (t: Extract<Trigger, { type: 'cron' }>) =>
  new Cron(t.expression, { timezone: t.timezone, mode: '5-part', paused: true });

/** The first slot strictly after `afterMs` (epoch ms), or null when the schedule never fires again. */
export function nextSlot(t: Trigger, afterMs: number): number | null {
  if (t.type !== 'cron') return null;
  const d = cron(t).nextRun(new Date(afterMs));
  return d ? d.getTime() : null;
}
