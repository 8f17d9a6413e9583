// The benches' operator side: one run's labels and work dir, a private devnet, operator PROGRAMS
// started as users run them (the bundle, blueprint-bin/dist/main.mjs, unless told), and the
// clean-up that stops them and removes exactly this run's containers and volumes.
import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  devnetOperatorEnv,
  operatorReady,
  spawnOperator,
  stopOperator,
} from '@agent-sandbox/blueprint-bin/testing';
import { type StartedDevnet, startDevnet } from '@agent-sandbox/devnet';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const ROOT = resolve(import.meta.dirname, '..', '..');

/** Builds the bundles users run (client/dist/cli.mjs, blueprint-bin/dist/main.mjs), as npm run build does. */
export function buildBins(...targets: Array<'client' | 'operator'>): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-bins.mjs'), ...targets], { stdio: 'inherit' });
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => res(port));
    });
  });
}

export interface Op {
  /** A devnet role (operator1, operator2) or a name of the bench's own (fleet-1 …). */
  role: string;
  child: ChildProcess;
  logFile: string;
  url: string;
  /** Set when the program ended before the clean-up: how, and how long after its start. */
  exited?: { code: number | null; signal: NodeJS.Signals | null; afterMs: number };
  /** The environment it was started with: a restart reuses it (same data dir, secret and port). */
  env: Record<string, string>;
  via: 'bundle' | 'main';
  bundle?: string;
  /** Set by a bench that kills it itself (a fleet's kill run): its exit is no finding. */
  killedOnPurpose?: boolean;
}

/** Another key, service or port than the devnet role's (a fleet operator of the bench's own). */
export interface OperatorAs {
  privateKey?: `0x${string}`;
  serviceId?: number | bigint;
  port?: number;
  /** Another bundle file than blueprint-bin/dist/main.mjs (an older build, for an A/B run). */
  bundle?: string;
}

/** One bench run: its labels, work dir, devnet and operators, and their clean-up. */
export class BenchRun {
  readonly id: string;
  readonly label: string;
  readonly labels: string[];
  readonly work: string;
  devnet: StartedDevnet | undefined;
  readonly ops: Op[] = [];
  private cleaning: Promise<void> | undefined;

  constructor(prefix: string) {
    this.id = `${prefix}-${process.pid}-${Date.now().toString(36)}`;
    this.label = `agent-sandbox.bench.run=${this.id}`;
    this.labels = ['agent-sandbox.test=1', 'agent-sandbox.bench=1', this.label];
    this.work = mkdtempSync(join(tmpdir(), `${this.id}-`));
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      // `on`, not `once`: a Ctrl-C reaches npx/tsx too, which relay it, and a second SIGINT must
      // not kill this process halfway through its clean-up.
      process.on(sig, () => {
        if (this.cleaning) return;
        console.error(`\n${sig}: cleaning up`);
        void this.cleanup().finally(() => process.exit(130));
      });
    }
  }

  async startDevnet(): Promise<StartedDevnet['info']> {
    this.devnet = await startDevnet({
      port: 0,
      stateFile: join(this.work, 'devnet.json'),
      reuse: false,
      detach: false,
    });
    return this.devnet.info;
  }

  /** Starts `agent-sandbox-operator run` for a devnet operator; resolves when its API is ready. */
  async startOperator(
    role: string,
    image: string,
    extra: Record<string, string>,
    via: 'bundle' | 'main' = 'bundle',
    as?: OperatorAs,
  ): Promise<Op> {
    const info = this.devnet!.info;
    const key = join(this.work, `${role}.key`);
    const privateKey = as?.privateKey ?? info.accounts[role as 'operator1' | 'operator2'].privateKey;
    writeFileSync(key, `${privateKey}\n`, { mode: 0o600 });
    const logFile = join(this.work, `${role}.log`);
    const fd = openSync(logFile, 'a');
    const env = devnetOperatorEnv(
      {
        devnet: info,
        blueprintId: info.blueprints.cloud,
        serviceId: as?.serviceId ?? info.services.cloud,
        dataDir: join(this.work, role),
        keyFile: key,
        port: as?.port ?? (await freePort()),
        operatorId: `${this.id}-${role}`,
        image,
        labels: this.labels.join(','),
        extra: { LOG_LEVEL: 'info', WS_RPC_URL: info.rpcUrl.replace(/^http/, 'ws'), ...extra },
      },
      randomBytes(32).toString('hex'),
    );
    const op: Op = {
      role,
      child: undefined as unknown as ChildProcess,
      logFile,
      url: '',
      env,
      via,
      ...(as?.bundle ? { bundle: as.bundle } : {}),
    };
    this.ops.push(op);
    await this.spawn(op, fd);
    return op;
  }

  /** Starts `op` again with the environment it had (its data dir, secret, port); resolves when ready. */
  async restartOperator(op: Op): Promise<void> {
    if (op.child.exitCode === null && op.child.signalCode === null) {
      throw new Error(`${op.role} is still running (pid ${op.child.pid})`);
    }
    op.killedOnPurpose = false;
    await this.spawn(op, openSync(op.logFile, 'a'));
  }

  /** SIGTERM (then SIGKILL after a grace) and wait for the exit. */
  stopOperator(op: Op): Promise<void> {
    return stopOperator(op.child);
  }

  private async spawn(op: Op, fd: number): Promise<void> {
    // dieWithParent: the kernel TERMs the operator if this process dies, even by SIGKILL.
    op.child = spawnOperator({
      env: op.env,
      cwd: ROOT,
      stderr: fd,
      dieWithParent: true,
      via: op.via,
      ...(op.bundle ? { bundle: op.bundle } : {}),
    });
    // An operator that ends before the clean-up (or a restart the bench asked for) is a finding,
    // not noise: say how it ended (exit code or signal) and where its log is, when it happens.
    const started = Date.now();
    const child = op.child;
    child.once('exit', (code, signal) => {
      if (this.cleaning || op.killedOnPurpose) return;
      op.exited = { code, signal, afterMs: Date.now() - started };
      console.error(
        `[bench] ${op.role} (pid ${child.pid}) ended before the clean-up: ${signal ? `signal ${signal}` : `exit code ${code}`} after ${((Date.now() - started) / 1000).toFixed(1)} s; its log: ${this.keptLogs()}/${op.role}.log`,
      );
    });
    op.url = await operatorReady(op.child, {
      name: op.role,
      timeoutMs: 120_000,
      log: () => `see ${op.logFile}\n${readFileSync(op.logFile, 'utf8').slice(-2000)}`,
    });
  }

  /** Removes this run's containers and volumes, one by one, re-listing until none is left. */
  async removeContainers(): Promise<number> {
    const list = async (kind: 'ps' | 'volume') => {
      const args = kind === 'ps' ? ['ps', '-aq'] : ['volume', 'ls', '-q'];
      const { stdout } = await exec('docker', [...args, '--filter', `label=${this.label}`]);
      return stdout.split('\n').filter(Boolean);
    };
    let removed = 0;
    for (let round = 0; round < 5; round++) {
      const ids = await list('ps');
      const vols = await list('volume');
      if (!ids.length && !vols.length) break;
      for (const id of ids)
        await exec('docker', ['rm', '-f', '-v', id]).then(
          () => removed++,
          () => {},
        );
      for (const v of vols) await exec('docker', ['volume', 'rm', '-f', v]).catch(() => {});
      await sleep(500);
    }
    return removed;
  }

  /** Copies the operators' logs out of the work dir (removed at exit), for a failure to be read. */
  keptLogs(): string {
    const dir = join(tmpdir(), `${this.id}-logs`);
    mkdirSync(dir, { recursive: true });
    for (const op of this.ops) copyFileSync(op.logFile, join(dir, `${op.role}.log`));
    return dir;
  }

  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      for (const op of [...this.ops].reverse()) await stopOperator(op.child).catch(() => {});
      const n = await this.removeContainers().catch(() => 0);
      if (n) console.error(`removed ${n} container(s)`);
      await this.devnet?.stop().catch(() => {});
      rmSync(this.work, { recursive: true, force: true });
    })();
    return this.cleaning;
  }
}
