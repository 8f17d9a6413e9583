// The console against a TEE sandbox, in a real browser: Debian's headless Chromium (playwright-core)
// on the real operator program in tee-instance mode (TEE_BACKEND=phala on the local fake of Phala
// Cloud, whose "CVM" is a real sidecar process; quotes signed by the test Intel PKI), reached
// through a wiretap at OPERATOR_PUBLIC_URL, with the service owner's devnet key as the wallet.
// The operator lies in /api/capabilities (another chain, service and operator): the panel still
// checks the chain's context, read through the wallet. A key other than the one the CLI verified
// is refused and opens nothing. Then secrets, exec, files, a chat run and a terminal go over the
// owner channel, and neither the browser↔operator link, nor the operator↔CVM link, nor the
// operator's log carries any of their plaintext.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromHex, parseDstackEventLog, replayDstackRtmrs } from '@agent-sandbox/attestation';
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
import { type Browser, chromium, type Page } from 'playwright-core';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';
import { freePort, logTail, operatorDir, serviceConfig } from '../../test/e2e/fixture.ts';
import { injectWallet } from './wallet.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const RUN = `console-tee-${Date.now().toString(36)}`;
const DIST = fileURLToPath(new URL('../dist/index.html', import.meta.url));
/** MRTD of the real quote the test PKI's quotes carry (attestation/testdata/tdx/tdx_quote.bin). */
const MRTD =
  '91eb2b44d141d4ece09f0c75c2c53d247a3c68edd7fafe8a3520c942a604a407de03ae6dc5f87f27428b2538873118b7';

let dir = '';
let dstack: FakeDstack | undefined;
let phala: FakePhala | undefined;
let pccs: { url: string; close(): Promise<void> } | undefined;
let operator: ChildProcess | undefined;
let tap: Wiretap | undefined;
let serviceId = 0n;
let browser: Browser | undefined;
const operatorLog = () => logTail(join(dir, 'operator.log'), 4000);

beforeAll(async () => {
  expect(existsSync('/usr/bin/chromium'), 'Chromium missing: bash scripts/ensure-toolchain.sh').toBe(true);
  expect(existsSync(DIST), 'console not built: npm run build -w @agent-sandbox/console').toBe(true);
  ({ dir } = await operatorDir(devnet, RUN));
  const pki = await createTdxTestPki();
  await saveTdxTestRoot(join(dir, 'pki'), pki);
  pccs = await startFakePccs(pki);
  const rtmr3 = fromHex(replayDstackRtmrs(parseDstackEventLog(DSTACK_SAMPLE.event_log))[3]!);
  dstack = await startFakeDstack(join(dir, 'dstack.sock'), {
    quote: (rd) => signTdxQuote(pki, rd, { rtmr3 }),
  });
  phala = await startFakePhala({ dstackSocket: dstack.socketPath, bootPolls: 1 });
  serviceId = await new DevnetJobs(devnet).newService(
    'teeInstance',
    serviceConfig({
      name: 'console-tee',
      env_json: '{}',
      max_lifetime_seconds: 3600n,
      idle_timeout_seconds: 900n,
      tee_required: true,
      tee_type: 1,
    }),
  );
  const apiPort = await freePort();
  tap = await startWiretap(`http://127.0.0.1:${apiPort}`);
  const env = devnetOperatorEnv(
    {
      devnet,
      blueprintId: devnet.blueprints.teeInstance,
      serviceId,
      keyFile: join(dir, 'operator-ecdsa.key'),
      operatorId: `${RUN}-operator1`,
      image,
      labels: 'agent-sandbox.test=1,agent-sandbox.test.suite=console-tee',
      extra: {
        DATA_DIR: join(dir, 'op'),
        OPERATOR_API_PORT: `${apiPort}`,
        OPERATOR_PUBLIC_URL: tap.url,
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
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
});

afterAll(async () => {
  await browser?.close();
  if (operator?.pid && operator.exitCode === null && operator.signalCode === null) {
    const gone = new Promise((r) => operator!.once('exit', r));
    process.kill(-operator.pid, 'SIGTERM');
    await gone;
  }
  await phala?.close();
  await dstack?.close();
  await pccs?.close();
  await tap?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The capabilities a lying operator serves: another chain, service, operator and contract. */
const LIE = {
  mode: 'tee-instance',
  operator: '0x000000000000000000000000000000000000dead',
  serviceId: '999',
  chain: { chainId: 1, tangle: '0x000000000000000000000000000000000000beef' },
};

describe('the console on a TEE sandbox: chain context, then everything over the owner channel', () => {
  it('checks the chain (not the capabilities), refuses another key, and sends only sealed bytes', async () => {
    const owner = privateKeyToAccount(devnet.accounts.serviceOwner.privateKey);
    // The key the owner verified with installed code: the CLI, against the test Intel root.
    const verify = await runCliInProcess(
      [
        'tee',
        'verify',
        '--operator',
        tap!.url,
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
        '--json',
      ],
      {
        configDir: join(dir, 'cli'),
        env: {
          AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey,
          AGENT_SANDBOX_TEST_MODE: 'true',
        },
      },
    );
    expect(verify.code, verify.err).toBe(0);
    const v = JSON.parse(verify.out) as { sandbox_id: string; context: string; public_key: string };
    expect(v.public_key).toMatch(/^[0-9a-f]{64}$/);

    const ctx = await browser!.newContext();
    await injectWallet(ctx, owner, devnet.rpcUrl);
    const errors: string[] = [];
    const page: Page = await ctx.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.route('**/api/capabilities', (r) => r.fulfill({ json: LIE }));
    const from = tap!.bytes().length;
    const cvmFrom = phala!.cvmWire().length;

    await page.goto(`${tap!.url}/console/`);
    await page.getByTestId('connect').click();
    await page.getByTestId('sign').click();
    await page.getByTestId('who').waitFor();
    await page.evaluate(`sessionStorage.setItem('console.selected', ${JSON.stringify(v.sandbox_id)})`);
    await page.reload();

    // Before a key is verified the owner tabs send nothing.
    await page.getByTestId('tab-Exec').click();
    await page.getByTestId('tee-needs-verify').waitFor();
    await page.getByTestId('tee-go-attest').click();

    await page.getByTestId('att-blueprint').fill(devnet.contracts.teeInstance);
    await page.getByTestId('att-service').fill(`${serviceId}`);
    const attest = async (key: string) => {
      await page.getByTestId('att-pinned-key').fill(key);
      await page.getByTestId('att-verify').click();
      const r = page.getByTestId('att-result');
      await r.waitFor();
      return {
        verdict: await r.getAttribute('data-verdict'),
        text: (await r.textContent()) ?? '',
        ctx: await page.getByTestId('att-ctx').textContent(),
      };
    };
    // A key other than the CLI's (what an operator swapping keys would serve from the page's view).
    const wrong = await attest('11'.repeat(32));
    expect(wrong.verdict).toBe('unverified');
    expect(wrong.text).toContain('not the key you pinned');
    expect(await page.getByTestId('tee-channel-open').count()).toBe(0);
    // The chain's context, whatever the capabilities said.
    expect(wrong.ctx).toBe(v.context);
    expect(wrong.ctx).not.toContain('999');
    expect(wrong.ctx).not.toContain('dead');

    const ok = await attest(v.public_key);
    expect(ok.verdict, ok.text).toBe('verified');
    expect(ok.text).toMatch(/Key pinned/);
    expect(ok.ctx).toBe(v.context);
    await page.getByTestId('tee-channel-open').waitFor();

    const tag = randomBytes(5).toString('hex');
    const secret = `web-sealed-${tag}`;
    const setSecret = async (name: string, value: string) => {
      await page.getByTestId('tab-Secrets').click();
      await page.getByTestId('secret-name').fill(name);
      await page.getByTestId('secret-value').fill(value);
      await page.getByTestId('secret-set').click();
      await page.getByTestId('secret-done').filter({ hasText: name }).waitFor();
    };
    await setSecret('TEE_WEB_SECRET', secret);
    await setSecret(
      'SANDBOX_AGENT_COMMAND',
      `printf 'reply:%s\\n' "$(printf %s "$SIDECAR_AGENT_MESSAGE" | tr a-z A-Z)"`,
    );

    await page.getByTestId('tab-Exec').click();
    await page.getByTestId('exec-command').fill(`printenv TEE_WEB_SECRET; echo cmd-${tag}-$((6*7))`);
    await page.getByTestId('exec-run').click();
    await page
      .getByTestId('exec-output')
      .filter({ hasText: `cmd-${tag}-42` })
      .waitFor();
    expect(await page.getByTestId('exec-output').textContent()).toContain(secret);

    await page.getByTestId('tab-Files').click();
    await page.getByTestId('files').waitFor({ state: 'attached' });
    await page.getByTestId('upload').setInputFiles({
      name: `f-${tag}.txt`,
      mimeType: 'text/plain',
      buffer: Buffer.from(`file-body-${tag}\n`),
    });
    await page
      .locator(`[data-name="f-${tag}.txt"]`)
      .getByRole('button', { name: `f-${tag}.txt` })
      .click();
    await page
      .getByTestId('file-view')
      .filter({ hasText: `file-body-${tag}` })
      .waitFor();

    await page.getByTestId('tab-Chat').click();
    await page.getByTestId('chat-input').fill(`whisper-${tag}`);
    await page.getByTestId('chat-send').click();
    await page
      .getByTestId('final-answer')
      .filter({ hasText: `reply:WHISPER-${tag.toUpperCase()}` })
      .waitFor();

    await page.getByTestId('tab-Terminal').click();
    const term = page.getByTestId('terminal');
    await term.locator('.xterm-rows').waitFor();
    await term.click();
    await page.keyboard.type(`echo term-${tag}-$((6*7))`);
    await page.keyboard.press('Enter');
    await term.locator('.xterm-rows', { hasText: `term-${tag}-42` }).waitFor({ timeout: 30_000 });

    const wires = {
      browserToOperator: tap!.bytes().subarray(from).toString('latin1'),
      operatorToCvm: phala!.cvmWire().subarray(cvmFrom).toString('latin1'),
      operatorLog: operatorLog(),
    };
    expect(wires.browserToOperator).toContain('/tee/channel');
    expect(wires.operatorToCvm.length).toBeGreaterThan(0);
    for (const plain of [
      secret,
      'TEE_WEB_SECRET',
      'printenv',
      `cmd-${tag}`,
      `f-${tag}`,
      `file-body-${tag}`,
      `whisper-${tag}`,
      `WHISPER-${tag.toUpperCase()}`,
      `term-${tag}`,
    ]) {
      for (const [where, bytes] of Object.entries(wires))
        expect(bytes, `${plain} on ${where}`).not.toContain(plain);
    }
    expect(errors).toEqual([]);
  }, 240_000);
});
