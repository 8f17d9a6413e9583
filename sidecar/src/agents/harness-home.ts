// Files a harness needs in the agent's home before it can run headless (only its own config dir).
import { join } from 'node:path';
import type { SidecarConfig } from '../config.ts';
import { readAsAgent, writeAsAgent } from './agent-files.ts';
import type { HarnessName } from './harness.ts';

/**
 * gemini-cli treats GOOGLE_GEMINI_BASE_URL as a "gateway" login it refuses headless unless the
 * settings select API-key auth, so with GEMINI_API_KEY set `~/.gemini/settings.json` gets
 * `security.auth.selectedType = "gemini-api-key"` (other settings kept). The key itself stays in the env.
 */
export async function prepareHarnessHome(
  harness: HarnessName,
  env: Record<string, string | undefined>,
  config: Pick<SidecarConfig, 'agentHome' | 'uid' | 'gid'>,
): Promise<void> {
  if (harness !== 'gemini' || !(env['GEMINI_API_KEY'] || env['GOOGLE_API_KEY'])) return;
  // Read and written as the agent user (never by root: the agent may have planted a symlink there).
  const file = join(config.agentHome, '.gemini', 'settings.json');
  // biome-ignore lint/suspicious/noExplicitAny: the user's settings file, kept as it is
  let settings: any = {};
  try {
    settings = JSON.parse((await readAsAgent(config, file)) ?? '{}');
  } catch {}
  if (typeof settings !== 'object' || settings === null) settings = {};
  if (settings.security?.auth?.selectedType) return;
  settings.security = {
    ...settings.security,
    auth: { ...settings.security?.auth, selectedType: 'gemini-api-key' },
  };
  await writeAsAgent(config, file, `${JSON.stringify(settings, null, 2)}\n`);
}
