// A configfs-tsm report tree in a temp dir, served by test firmware that signs SNP reports with
// a test PKI over whatever inblob was written. inblob, generation, outblob and auxblob are FIFOs,
// so each read/write pairs with the client's in the kernel's order (no polling, no sleeps).
// Test-only: real quotes come from the kernel.
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { certTableWithVcek } from '@agent-sandbox/attestation';
import { type SevTestPki, signSnpReport } from '@agent-sandbox/attestation/testing';

export interface FakeTsmOptions {
  root: string;
  pki: SevTestPki;
  entry?: string;
  provider?: string;
  measurement?: Uint8Array;
  /** Race simulation: for the first N rounds another writer bumps generation mid-read. */
  racedRounds?: number;
  /**
   * provider tdx_guest: a real quote to serve with the inblob patched into its report_data (its
   * signature then no longer verifies: this exercises the client's TDX path, not verification).
   */
  tdxQuoteTemplate?: Uint8Array;
}

export class FakeTsmFirmware {
  readonly dir: string;
  generation = 0;
  rounds = 0;
  #stopped = false;
  #waiting: { path: string; flags: number } | undefined;
  #loop: Promise<void> | undefined;

  constructor(private readonly o: FakeTsmOptions) {
    this.dir = join(o.root, o.entry ?? 'agent-sandbox');
  }

  async start(): Promise<this> {
    await mkdir(this.dir, { recursive: true });
    await writeFile(join(this.dir, 'provider'), `${this.o.provider ?? 'sev_guest'}\n`);
    await writeFile(join(this.dir, 'privlevel'), '0\n');
    for (const f of this.#tdx
      ? ['inblob', 'generation', 'outblob']
      : ['inblob', 'generation', 'outblob', 'auxblob']) {
      // A tree left by an earlier run keeps its FIFOs: make each one fresh.
      await rm(join(this.dir, f), { force: true });
      execFileSync('mkfifo', ['-m', '600', join(this.dir, f)]);
    }
    this.#loop = this.#serve();
    return this;
  }

  get #tdx(): boolean {
    return this.o.provider === 'tdx_guest' && this.o.tdxQuoteTemplate !== undefined;
  }

  async #read(name: string): Promise<Buffer> {
    this.#waiting = { path: join(this.dir, name), flags: constants.O_WRONLY | constants.O_NONBLOCK };
    return readFile(join(this.dir, name));
  }

  async #write(name: string, data: Uint8Array | string): Promise<void> {
    this.#waiting = { path: join(this.dir, name), flags: constants.O_RDONLY | constants.O_NONBLOCK };
    await writeFile(join(this.dir, name), data);
  }

  async #serve(): Promise<void> {
    while (!this.#stopped) {
      const inblob = await this.#read('inblob');
      if (this.#stopped) return;
      this.generation += 1;
      this.rounds += 1;
      const privlevel = (await readFile(join(this.dir, 'privlevel'), 'utf8')).trim();
      const report = this.#tdx
        ? Buffer.concat([
            this.o.tdxQuoteTemplate!.subarray(0, 568),
            inblob.subarray(0, 64),
            this.o.tdxQuoteTemplate!.subarray(632),
          ])
        : signSnpReport(
            {
              reportData: new Uint8Array(inblob.subarray(0, 64)),
              vmpl: Number(privlevel),
              ...(this.o.measurement ? { measurement: this.o.measurement } : {}),
            },
            this.o.pki.vcekKey,
          );
      const g1 = this.generation;
      await this.#write('generation', `${g1}\n`);
      await this.#write('outblob', report);
      if (!this.#tdx) await this.#write('auxblob', certTableWithVcek(this.o.pki.vcekDer));
      if (this.rounds <= (this.o.racedRounds ?? 0)) this.generation += 1; // another writer came in
      await this.#write('generation', `${this.generation}\n`);
    }
  }

  /** Unblocks whatever FIFO the firmware waits on and ends its loop. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const w = this.#waiting;
    if (w) {
      const fh = await open(w.path, w.flags).catch(() => undefined);
      await fh?.close();
    }
    await this.#loop?.catch(() => {});
  }
}
