// Files a harness needs in the agent's home before it can run headless (only its own config dir).
import { chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SidecarConfig } from '../config.ts';
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
  const dir = join(config.agentHome, '.gemini');
  const file = join(dir, 'settings.json');
  // biome-ignore lint/suspicious/noExplicitAny: the user's settings file, kept as it is
  let settings: any = {};
  try {
    settings = JSON.parse(await readFile(file, 'utf8'));
  } catch {}
  if (typeof settings !== 'object' || settings === null) settings = {};
  if (settings.security?.auth?.selectedType) return;
  settings.security = {
    ...settings.security,
    auth: { ...settings.security?.auth, selectedType: 'gemini-api-key' },
  };
  await mkdir(dir, { recursive: true });
  await writeFile(file, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  if (process.getuid?.() === 0) {
    await chown(dir, config.uid, config.gid);
    await chown(file, config.uid, config.gid);
  }
}
