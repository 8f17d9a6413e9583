// CLI: builds (or finds cached) the sandbox image and prints its tag. `--with-harnesses` adds the agent CLIs.
import { ensureSandboxImage } from '@agent-sandbox/sandbox-image';

const withHarnesses =
  process.argv.includes('--with-harnesses') || process.env['SANDBOX_WITH_HARNESSES'] === '1';
const started = Date.now();
try {
  const { tag, built } = await ensureSandboxImage({
    withHarnesses,
    onProgress: (line) => process.stderr.write(`[image] ${line}\n`),
  });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(`[image] ${tag} ${built ? `built in ${secs} s` : 'already present (cached)'}\n`);
  process.stdout.write(`${tag}\n`);
} catch (err) {
  const e = err as { code?: string; message?: string };
  process.stderr.write(`[image] error${e.code ? ` ${e.code}` : ''}: ${e.message ?? String(err)}\n`);
  process.exit(1);
}
