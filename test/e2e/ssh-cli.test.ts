// SSH through the real programs: an `agent-sandbox-operator run` process on a fresh cloud service of
// the shared devnet, the bundled `agent-sandbox` CLI (create --ssh-key, ssh add|list|remove) and
// Debian's ssh and scp with `agent-sandbox ssh connect %h` as their ProxyCommand, so the bytes go
// through the operator API's WebSocket tunnel under the CLI's wallet session. Attack first: the
// owner's SSH key in the hands of another wallet gets no tunnel; then the owner's shell, scp both
// ways, and a key added and removed with the CLI.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BUNDLED_CLI, type CliResult, type CloudOperator, startCloudOperator } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-ssh-${Date.now().toString(36)}`;
const SUITE_LABEL = 'agent-sandbox.test.suite=e2e-ssh-cli';
let op: CloudOperator | undefined;
let dir = '';
let id = '';

function run(cmd: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('error', reject);
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const key = (name: string) => join(dir, name);
/** ssh/scp options: this key only, no config, no prompt, the CLI as the ProxyCommand. */
const opts = (k: string) => [
  '-F',
  'none',
  '-i',
  key(k),
  '-o',
  'IdentitiesOnly=yes',
  '-o',
  'BatchMode=yes',
  '-o',
  `UserKnownHostsFile=${key('known_hosts')}`,
  '-o',
  'StrictHostKeyChecking=accept-new',
  '-o',
  'ConnectTimeout=60',
  '-o',
  `ProxyCommand=${process.execPath} ${BUNDLED_CLI} ssh connect %h`,
];
const ssh = (k: string, command: string, env = op!.cliEnv) =>
  run('ssh', [...opts(k), `agent@${id}`, command], env);
const scp = (k: string, from: string, to: string) => run('scp', [...opts(k), from, to], op!.cliEnv);

beforeAll(async () => {
  if (!existsSync(BUNDLED_CLI))
    throw new Error(`${BUNDLED_CLI} is missing: run node scripts/build-bins.mjs first`);
  dir = await mkdtemp(join(tmpdir(), `${RUN}-keys-`));
  for (const k of ['owner', 'second'])
    expect(
      (
        await run(
          'ssh-keygen',
          ['-q', '-t', 'ed25519', '-N', '', '-C', `${k}@e2e`, '-f', key(k)],
          process.env as Record<string, string>,
        )
      ).code,
    ).toBe(0);
  op = await startCloudOperator(devnet, { run: RUN, suiteLabel: SUITE_LABEL, image, cliBin: BUNDLED_CLI });
  const r = op.ok(await op.cli(['create', '--json', '--name', 'ssh', '--ssh-key', `${key('owner')}.pub`]));
  id = (JSON.parse(r.stdout) as { sandbox: { id: string } }).sandbox.id;
}, 600_000);

afterAll(async () => {
  await op?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

describe('ssh and scp through `agent-sandbox ssh connect`', () => {
  it("attack: the owner's SSH key used from another wallet gets no tunnel", async () => {
    const stranger = {
      ...op!.cliEnv,
      AGENT_SANDBOX_PRIVATE_KEY: generatePrivateKey(),
      AGENT_SANDBOX_CONFIG_DIR: join(dir, 'stranger-cli'),
    };
    const r = await ssh('owner', 'echo in', stranger);
    expect(r.code).toBe(255);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/agent-sandbox: .*(403|404|FORBIDDEN|NOT_FOUND)/i);
  }, 180_000);

  it("the owner's key gets a shell as agent, and scp works both ways", async () => {
    const shell = await ssh('owner', 'id -un; echo $HOME');
    expect(shell.stdout, shell.stderr).toBe('agent\n/home/agent\n');
    expect(shell.code).toBe(0);

    await writeFile(key('up.txt'), 'through the CLI tunnel\n');
    expect((await scp('owner', key('up.txt'), `agent@${id}:workspace/up.txt`)).code).toBe(0);
    expect(op!.ok(await op!.cli(['exec', id, '--', 'cat workspace/up.txt'])).stdout).toBe(
      'through the CLI tunnel\n',
    );
    const back = await scp('owner', `agent@${id}:workspace/up.txt`, key('back.txt'));
    expect(back.code, back.stderr).toBe(0);
    expect(await readFile(key('back.txt'), 'utf8')).toBe('through the CLI tunnel\n');
  }, 180_000);

  it('a key added with `ssh add` gets in; after `ssh remove` it is refused and the other still works', async () => {
    expect((await ssh('second', 'true')).stderr).toMatch(/Permission denied \(publickey\)/);
    const added = op!.ok(await op!.cli(['ssh', 'add', id, `${key('second')}.pub`]));
    const fp = added.stdout.split(' ')[0]!;
    expect(fp).toMatch(/^SHA256:/);
    expect(op!.ok(await op!.cli(['ssh', 'list', id])).stdout).toContain(`${fp}\tssh-ed25519\tsecond@e2e`);
    expect((await ssh('second', 'echo second')).stdout).toBe('second\n');

    op!.ok(await op!.cli(['ssh', 'remove', id, `${key('second')}.pub`]));
    const refused = await ssh('second', 'true');
    expect(refused.code).toBe(255);
    expect(refused.stderr).toMatch(/Permission denied \(publickey\)/);
    expect((await ssh('owner', 'echo still')).stdout).toBe('still\n');
  }, 240_000);
});
