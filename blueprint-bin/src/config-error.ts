// The operator configuration's one error: every missing or malformed variable listed at once.
// Its own module, so `main` can match it by class without loading the sdk to print help.
import { BaseError } from '@agent-sandbox/errors';

export class ConfigError extends BaseError<'CONFIG'> {
  override readonly name = 'ConfigError';
  readonly problems: Array<{ variable: string; problem: string }>;
  constructor(problems: Array<{ variable: string; problem: string }>) {
    const list = problems.map((p) => `  - ${p.variable} ${p.problem}`).join('\n');
    super(
      'CONFIG',
      `The operator configuration is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}); ` +
        `set or fix these variables and start again (see the README's Configuration table):\n${list}`,
    );
    this.problems = problems;
  }
}
