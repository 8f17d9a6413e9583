// TEE_BACKEND=phala through the real operator program: `agent-sandbox-operator run` in
// tee-instance mode deploys the instance sandbox as a CVM on a local fake of the Phala Cloud API
// (whose "CVM" is a real sidecar process with a fake dstack agent socket in the real sample's
// shape), reports it on chain, and serves it on its API: the owner signs in, gets evidence over
// a nonce of their own bound to the CVM's key (and naming the owner), seals a secret over the owner
// channel the operator relays blind, and a command sent the same way sees it; the operator's own
// paths (its API's plain exec, its token) run nothing there. The CLI with --tee verifies the
// enclave and sends exec, files, prompts and terminal keys over that channel; two wiretaps (the
// CLI↔operator link and the operator↔CVM link) carry none of their plaintext. No real CVM or
// Phala account was reached: the quotes are signed by a test Intel PKI (its root trusted only
// with --test-anchors in test mode), from a real quote's TD report.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  ChannelClient,
  checkBinding,
  fromHex,
  parseContext,
  parseDstackEventLog,
  replayDstackRtmrs,
  sealSecrets,
} from '@agent-sandbox/attestation';
import {
  createTdxTestPki,
  saveTdxTestRoot,
  signTdxQuote,
  startFakePccs,
} from '@agent-sandbox/attestation/testing';
import { devnetOperatorEnv, operatorReady, spawnOperator } from '@agent-sandbox/blueprint-bin/testing';
import { DevnetJobs } from '@agent-sandbox/blueprint-lib/testing';
import {
  FAKE_PHALA_API_KEY,
  type FakePhala,
  startFakePhala,
  startWiretap,
  type Wiretap,
} from '@agent-sandbox/runtime/testing';
import { DSTACK_SAMPLE, type FakeDstack, startFakeDstack } from '@agent-sandbox/sidecar/testing';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';
import { signInOverHttp } from '../../runtime/src/api/testing/sign-in.ts';
import { freePort, logTail, operatorDir, serviceConfig } from './fixture.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `e2e-phala-${Date.now().toString(36)}`;

let dir = '';
let dstack: FakeDstack;
let phala: FakePhala;
let pccs: { url: string; close(): Promise<void> } | undefined;
/** MRTD of the real quote the test PKI's quotes carry (attestation/testdata/tdx/tdx_quote.bin). */
const MRTD =
  '91eb2b44d141d4ece09f0c75c2c53d247a3c68edd7fafe8a3520c942a604a407de03ae6dc5f87f27428b2538873118b7';
let operator: ChildProcess | undefined;
let operatorUrl = '';
/** Every byte between the owner (test, CLI) and the operator API: operatorUrl is this tap. */
let apiTap: Wiretap | undefined;
let serviceId = 0n;
const operatorLog = () => logTail(join(dir, 'operator.log'), 4000);

const config = serviceConfig({
  name: 'phala-e2e',
  env_json: '{"MODE":"cvm"}',
  max_lifetime_seconds: 3600n,
  idle_timeout_seconds: 900n,
  tee_required: true,
  tee_type: 1,
});

beforeAll(async () => {
  ({ dir } = await operatorDir(devnet, RUN));
  const pki = await createTdxTestPki();
  await saveTdxTestRoot(join(dir, 'pki'), pki);
  pccs = await startFakePccs(pki);
  // RTMR3 = the replay of the event log the fake agent serves beside each quote (as dstack's is).
  const rtmr3 = fromHex(replayDstackRtmrs(parseDstackEventLog(DSTACK_SAMPLE.event_log))[3]!);
  dstack = await startFakeDstack(join(dir, 'dstack.sock'), {
    quote: (rd) => signTdxQuote(pki, rd, { rtmr3 }),
  });
  phala = await startFakePhala({ dstackSocket: dstack.socketPath, bootPolls: 1 });
  serviceId = await new DevnetJobs(devnet).newService('teeInstance', config);
  const apiPort = await freePort();
  apiTap = await startWiretap(`http://127.0.0.1:${apiPort}`);
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.teeInstance,
      serviceId,
      keyFile: join(dir, 'operator-ecdsa.key'),
      operatorId: `${RUN}-operator1`,
      image,
      labels: `agent-sandbox.test=1,agent-sandbox.test.suite=e2e-phala`,
      extra: {
        DATA_DIR: join(dir, 'op'),
        OPERATOR_API_PORT: `${apiPort}`,
        OPERATOR_PUBLIC_URL: apiTap.url,
        OPERATOR_MODE: 'tee-instance',
        TEE_BACKEND: 'phala',
        PHALA_API_KEY: FAKE_PHALA_API_KEY,
        PHALA_API_ENDPOINT: phala.endpoint,
        PHALA_SANDBOX_IMAGE: `reg.example/agent-sandbox@sha256:${'a'.repeat(64)}`,
        TEE_PCCS_URL: pccs.url,
      },
    },
    randomBytes(32).toString('hex'),
  );
  operator = spawnOperator({ env, detached: true, stderr: openSync(join(dir, 'operator.log'), 'a') });
  await operatorReady(operator, { log: operatorLog });
  operatorUrl = apiTap.url;
});

afterAll(async () => {
  if (operator?.pid && operator.exitCode === null && operator.signalCode === null) {
    const gone = new Promise((r) => operator!.once('exit', r));
    process.kill(-operator.pid, 'SIGTERM');
    await gone;
  }
  await phala?.close();
  await dstack?.close();
  await pccs?.close();
  await apiTap?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('tee-instance on TEE_BACKEND=phala through the operator program', () => {
  it('serves the CVM sandbox: bound evidence, a sealed secret only the CVM opens, exec sees it', async () => {
    expect(phala.cvm(), operatorLog()).toBeDefined();
    const owner = privateKeyToAccount(devnet.accounts.serviceOwner.privateKey);
    const token = await signInOverHttp(operatorUrl, owner);
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${operatorUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      // biome-ignore lint/suspicious/noExplicitAny: test-only convenience
      return { status: r.status, json: (await r.json()) as any };
    };
    const nonce = randomBytes(32).toString('hex');
    const pk = await call('GET', `/api/sandbox/tee/public-key?nonce=${nonce}`);
    expect(pk.status, JSON.stringify(pk.json)).toBe(200);
    const ctx = pk.json.binding.ctx as string;
    const { sandboxId, operator: ctxOperator, owner: ctxOwner } = parseContext(ctx);
    expect(ctxOperator).toBe(devnet.accounts.operator1.address.toLowerCase());
    // The enclave says whom it obeys: the service owner.
    expect(ctxOwner).toBe(owner.address.toLowerCase());
    checkBinding(fromHex(pk.json.evidence).subarray(568, 632), ctx, fromHex(pk.json.pubkey), fromHex(nonce));

    const relayed: Uint8Array[] = [];
    const channel = new ChannelClient({
      pubkey: fromHex(pk.json.pubkey),
      ctx,
      address: owner.address,
      signMessage: (message) => owner.signMessage({ message }),
      relay: async (bytes, type) => {
        relayed.push(bytes);
        const r = await fetch(`${operatorUrl}/api/sandbox/tee/channel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': type },
          body: Buffer.from(bytes),
        });
        const back = new Uint8Array(await r.arrayBuffer());
        relayed.push(back);
        return new Response(back, { status: r.status, headers: r.headers });
      },
    });
    const secret = `sealed-${randomBytes(6).toString('hex')}`;
    const body = sealSecrets(fromHex(pk.json.pubkey), ctx, sandboxId, { CVM_SECRET: secret });
    // Handed to the operator's plain route, a sealed body is refused (the operator could seal its own).
    expect((await call('POST', '/api/sandbox/tee/sealed-secrets', body)).status).toBe(409);
    expect((await channel.json('POST', '/tee/sealed-secrets', body)).json).toEqual({
      success: true,
      secrets_count: 1,
    });
    // A plaintext secret would pass through the operator: refused for a CVM sandbox.
    const plain = await call('POST', `/api/sandboxes/${sandboxId}/secrets`, { env: { X: 'y' } });
    expect([plain.status, JSON.stringify(plain.json)]).toEqual([409, expect.stringMatching(/Phala CVM/)]);

    const run = await channel.json('POST', '/terminals/commands', {
      command: 'printenv CVM_SECRET; echo "[$MODE]"',
    });
    expect(run.status).toBe(200);
    // The chain's create env is not delivered by the operator: in a CVM only the owner sets env.
    expect((run.json as { result: { stdout: string } }).result.stdout.trim().split('\n')).toEqual([
      secret,
      '[]',
    ]);
    expect(Buffer.concat(relayed).toString('latin1')).not.toContain(secret);
    expect(Buffer.concat(relayed).toString('latin1')).not.toContain('printenv');

    // The operator's own path into the sandbox (its API's plain exec, its sidecar token) runs nothing.
    const exec = await runCliInProcess(
      ['exec', sandboxId, '--operator', operatorUrl, 'printenv CVM_SECRET'],
      {
        configDir: join(dir, 'cli'),
        env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey },
      },
    );
    // Said plainly (exit 4), never a bare 403: the CVM takes exec only over the owner channel.
    expect([exec.code, exec.err], exec.err).toEqual([4, expect.stringMatching(/owner channel.*--tee/)]);
    expect(exec.out + exec.err).not.toContain(secret);
    const asOperator = await fetch(`${phala.cvm()!.sidecar.sidecar.url}/terminals/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${phala.cvm()!.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'printenv CVM_SECRET' }),
    });
    expect(asOperator.status).toBe(403);
    expect(await asOperator.text()).not.toContain(secret);
    expect(operatorLog()).not.toContain(secret);
  });

  it('without the test root the CLI fails closed (the quotes are not Intel-signed): verify and sealed secrets exit 8, nothing sent', async () => {
    const target = [
      '--operator',
      operatorUrl,
      '--rpc',
      devnet.rpcUrl,
      '--blueprint',
      devnet.contracts.teeInstance,
      '--service',
      `${serviceId}`,
      '--measurement',
      'ab'.repeat(48),
    ];
    const env = { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey };
    const verify = await runCliInProcess(['tee', 'verify', ...target], { configDir: join(dir, 'cli2'), env });
    expect(verify.code, verify.err).toBe(8);
    expect(verify.err).toMatch(/TDX|collateral|verif/i);
    const before = phala.calls.length;
    const sealed = await runCliInProcess(['secrets', 'set', 'x', 'NEVER', '--sealed', ...target], {
      configDir: join(dir, 'cli3'),
      env: { ...env, NEVER: 'never-sent' },
    });
    expect(sealed.code, sealed.err).toBe(8);
    expect(JSON.stringify(phala.calls.slice(before))).not.toContain('never-sent');
    expect(operatorLog()).not.toContain('never-sent');
  });

  it('the CLI with --tee: exec, files, prompt and terminal go over the channel; neither link carries their plaintext', async () => {
    const tap = apiTap!;
    const apiFrom = tap.bytes().length;
    const cvmFrom = phala.cvmWire().length;
    const tag = randomBytes(5).toString('hex');
    const secret = `cli-sealed-${tag}`;
    const env = {
      AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey,
      AGENT_SANDBOX_TEST_MODE: 'true',
      TEE_CLI_SECRET: secret,
      SANDBOX_AGENT_COMMAND: `printf 'reply:%s\\n' "$(printf %s "$SIDECAR_AGENT_MESSAGE" | tr a-z A-Z)"`,
    };
    const target = [
      '--operator',
      operatorUrl,
      '--rpc',
      devnet.rpcUrl,
      '--blueprint',
      devnet.contracts.teeInstance,
      '--service',
      `${serviceId}`,
      '--measurement',
      MRTD,
      '--test-anchors',
      join(dir, 'pki'),
    ];
    const cli = (
      argv: string[],
      extra: Parameters<typeof runCliInProcess>[1] extends infer O ? Partial<O> : never = {},
    ) =>
      runCliInProcess(argv, {
        configDir: join(dir, 'cli-tee') /* one session: sign-in is rate limited */,
        env,
        ...extra,
      });
    const verify = await cli(['tee', 'verify', ...target, '--json']);
    expect(verify.code, verify.err).toBe(0);
    const sid = (JSON.parse(verify.out) as { sandbox_id: string }).sandbox_id;
    const sealed = await cli([
      'secrets',
      'set',
      sid,
      'TEE_CLI_SECRET',
      'SANDBOX_AGENT_COMMAND',
      '--sealed',
      ...target,
    ]);
    expect(sealed.code, sealed.err).toBe(0);

    const command = `printenv TEE_CLI_SECRET; echo cmd-${tag}-$((6*7))`;
    const exec = await cli(['exec', sid, '--tee', ...target, '--', command]);
    expect([exec.code, exec.out], exec.err).toEqual([0, `${secret}\ncmd-${tag}-42\n`]);

    const body = `file-body-${tag}\n`;
    await writeFile(join(dir, 'up.txt'), body);
    const put = await cli([
      'files',
      'put',
      sid,
      join(dir, 'up.txt'),
      `notes-${tag}/f.txt`,
      '--tee',
      ...target,
    ]);
    expect(put.code, put.err).toBe(0);
    const get = await cli([
      'files',
      'get',
      sid,
      `notes-${tag}/f.txt`,
      join(dir, 'down.txt'),
      '--tee',
      ...target,
    ]);
    expect(get.code, get.err).toBe(0);
    expect(await readFile(join(dir, 'down.txt'), 'utf8')).toBe(body);
    const ls = await cli(['files', 'ls', sid, `notes-${tag}`, '--tee', '--json', ...target]);
    expect((JSON.parse(ls.out) as { entries: Array<{ name: string }> }).entries.map((e) => e.name)).toEqual([
      'f.txt',
    ]);

    const prompt = await cli(['prompt', sid, '--tee', ...target, `whisper-${tag}`]);
    expect([prompt.code, prompt.out], prompt.err).toEqual([0, `reply:WHISPER-${tag.toUpperCase()}\n`]);

    // The terminal: keys in over the channel (buffered until it opens), the PTY's output back;
    // it leaves when input ends, once the answer is on screen.
    const stdin = new PassThrough();
    stdin.write(`echo term-${tag}-$((6*7))\n`);
    const t = await cli(['terminal', sid, '--tee', ...target], {
      stdin,
      onStdout: (soFar) => {
        if (soFar.includes(`term-${tag}-42`)) stdin.end();
      },
    });
    expect(t.code, t.err).toBe(0);
    expect(t.out).toContain(`term-${tag}-42`);

    // What the operator handled: its API link and its link to the CVM; and its log.
    const wires = {
      operatorApi: tap.bytes().subarray(apiFrom).toString('latin1'),
      toCvm: phala.cvmWire().subarray(cvmFrom).toString('latin1'),
      log: operatorLog(),
    };
    expect(wires.toCvm.length).toBeGreaterThan(0);
    for (const plain of [
      secret,
      `cmd-${tag}`,
      'printenv',
      `file-body-${tag}`,
      `whisper-${tag}`,
      `WHISPER-${tag.toUpperCase()}`,
      `term-${tag}`,
    ]) {
      for (const [where, bytes] of Object.entries(wires))
        expect(bytes, `${plain} on ${where}`).not.toContain(plain);
    }
  });
});
