// Writes (--write) or checks the README's "## Configuration" section from the config schema:
// `npx tsx blueprint-bin/src/config-doc.ts --write`.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configMarkdown } from './config.ts';

export const README = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md');

export function configurationSection(): string {
  return [
    '## Configuration',
    '',
    'The operator (`agent-sandbox-operator`, in `blueprint-bin/`) reads only environment variables.',
    'All of them are validated at start, and one error lists every missing or malformed one; secrets',
    'are never echoed or logged. This table is generated from the schema in',
    '`blueprint-bin/src/config-vars.ts` (`npx tsx blueprint-bin/src/config-doc.ts --write`); a test keeps',
    'them equal.',
    '',
    configMarkdown(),
    '',
  ].join('\n');
}

/** README text with its Configuration section replaced (or appended when there is none). */
export function withConfigurationSection(readme: string): string {
  const section = configurationSection();
  const start = readme.search(/^## Configuration\s*$/m);
  if (start < 0) return `${readme.replace(/\n*$/, '')}\n\n${section}`;
  const rest = readme.slice(start + 1);
  const next = rest.search(/^## /m);
  const end = next < 0 ? readme.length : start + 1 + next;
  return `${readme.slice(0, start)}${section}${next < 0 ? '' : `\n${readme.slice(end)}`}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const current = readFileSync(README, 'utf8');
  const next = withConfigurationSection(current);
  if (process.argv.includes('--write')) {
    writeFileSync(README, next);
    process.stdout.write(`updated ${README}\n`);
  } else if (next !== current) {
    process.stderr.write('README Configuration section is out of date; run with --write\n');
    process.exitCode = 1;
  }
}
