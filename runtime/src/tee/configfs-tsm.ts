// Linux configfs-tsm (≥ 6.7) report client, the `direct` backend's source of quotes: check the
// provider, write the 64-byte inblob (SEV: privlevel first), read generation, outblob (and the
// SEV auxblob), generation again; a changed generation or a foreign report_data means another
// writer raced us, so try again. No vendor SDK, no ioctl.
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RuntimeError } from '../errors.ts';

export type TsmProvider = 'tdx_guest' | 'sev_guest';

export interface TsmOptions {
  /** TEE_TSM_REPORT_ROOT, default /sys/kernel/config/tsm/report. */
  root: string;
  provider: TsmProvider;
  /** The report entry (mkdir'd once, shared; the generation check makes sharing safe). */
  entry?: string;
  /** Attempts before giving up on a contended entry. Default 5. */
  attempts?: number;
}

export interface TsmReport {
  outblob: Uint8Array;
  auxblob?: Uint8Array;
  generation: number;
  /** How many attempts it took (1 unless another writer raced). */
  attempts: number;
}

export const DEFAULT_TSM_ROOT = '/sys/kernel/config/tsm/report';
export const DEFAULT_TSM_ENTRY = 'agent-sandbox';

/** Fails with what to do when the tree is missing or belongs to another TEE. */
export async function checkTsmTree(o: TsmOptions): Promise<string> {
  const st = await stat(o.root).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new RuntimeError(
      'CONFIG_INVALID',
      `TEE_TSM_REPORT_ROOT ${o.root} does not exist: this host is not a confidential VM exposing configfs-tsm ` +
        '(needs Linux ≥ 6.7 inside a TDX or SEV-SNP guest, configfs mounted at /sys/kernel/config); ' +
        'run the operator on one, or use another TEE_BACKEND',
    );
  }
  const dir = join(o.root, o.entry ?? DEFAULT_TSM_ENTRY);
  await mkdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') {
      throw new RuntimeError(
        'CONFIG_INVALID',
        `cannot create the TSM report entry ${dir}: ${e.code ?? e.message}`,
      );
    }
  });
  const provider = (await readFile(join(dir, 'provider'), 'utf8').catch(() => '')).trim();
  if (provider !== o.provider) {
    throw new RuntimeError(
      'CONFIG_INVALID',
      `configfs-tsm provider is "${provider || 'missing'}", expected "${o.provider}": ` +
        'TEE_DIRECT_TYPE does not match this confidential VM (tdx → tdx_guest, sev → sev_guest)',
    );
  }
  return dir;
}

/** report_data inside the outblob: SNP report 0x50; TDX quote v4 header 48 + TD report offset 520. */
function reportDataOf(provider: TsmProvider, outblob: Uint8Array): Uint8Array {
  const at = provider === 'sev_guest' ? 0x50 : 48 + 520;
  return outblob.subarray(at, at + 64);
}

export async function tsmReport(o: TsmOptions, inblob: Uint8Array): Promise<TsmReport> {
  if (inblob.length !== 64) throw new RuntimeError('VALIDATION', 'TSM inblob must be exactly 64 bytes');
  const dir = await checkTsmTree(o);
  const max = o.attempts ?? 5;
  for (let attempt = 1; attempt <= max; attempt++) {
    if (o.provider === 'sev_guest') await writeFile(join(dir, 'privlevel'), '0\n');
    await writeFile(join(dir, 'inblob'), inblob);
    const g1 = Number((await readFile(join(dir, 'generation'), 'utf8')).trim());
    const outblob = new Uint8Array(await readFile(join(dir, 'outblob')));
    const auxblob =
      o.provider === 'sev_guest' ? new Uint8Array(await readFile(join(dir, 'auxblob'))) : undefined;
    const g2 = Number((await readFile(join(dir, 'generation'), 'utf8')).trim());
    const ours = Buffer.compare(Buffer.from(reportDataOf(o.provider, outblob)), Buffer.from(inblob)) === 0;
    if (Number.isFinite(g1) && g1 === g2 && ours) {
      return { outblob, ...(auxblob ? { auxblob } : {}), generation: g1, attempts: attempt };
    }
  }
  throw new RuntimeError(
    'CONFLICT',
    `configfs-tsm entry ${dir} kept changing under us (${max} attempts): another process writes it; retry`,
  );
}
