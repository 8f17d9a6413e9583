import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ChannelClient, fromHex, sealSecrets, toHex } from '@agent-sandbox/attestation';
import { chromium } from 'playwright-core';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';
import { injectWallet } from '../../console/test/wallet.ts';
import { freePort, ROOT } from './fixture.ts';
import {
  cli,
  devnet,
  dir,
  docker,
  MEASUREMENT,
  operatorEnv,
  operatorLog,
  operatorUrl,
  relay,
  SUITE_LABEL,
  serviceId,
  startOperator,
  TEST_ANCHORS,
  TEST_ENV,
  target,
  useTeeDirectOperator,
} from './tee-direct-fixture.ts';

useTeeDirectOperator();
let sandboxId = '';

describe('tee-instance end to end (direct backend, test SEV PKI)', () => {
  it('refuses to start when the configfs-tsm tree is missing, saying why', async () => {
    await expect(
      startOperator(
        operatorEnv({
          DATA_DIR: join(dir, 'refused'),
          TEE_TSM_REPORT_ROOT: join(dir, 'no-tsm'),
          OPERATOR_API_PORT: `${await freePort()}`,
        }),
      ),
    ).rejects.toThrow(/not a confidential VM exposing configfs-tsm/);
  });

  it('the CLI verifies the enclave (chain + fresh nonce), seals a secret, and exec sees it', async () => {
    const ok = await cli(
      [
        'tee',
        'verify',
        '--json',
        ...target(),
        '--measurement',
        MEASUREMENT,
        '--sev-min-tcb',
        '3:0:8:115',
        ...TEST_ANCHORS(),
      ],
      TEST_ENV,
    );
    expect(ok.code, `${ok.err}\n${operatorLog()}`).toBe(0);
    const v = JSON.parse(ok.out) as {
      verdict: string;
      sandbox_id: string;
      tee: string;
      measurements: Record<string, string>;
    };
    expect(v).toMatchObject({ verdict: 'verified', tee: 'sev' });
    expect(v.measurements['measurement']).toBe(MEASUREMENT);
    sandboxId = v.sandbox_id;

    const secret = `sealed-${randomBytes(6).toString('hex')}`;
    const sealed = await cli(
      [
        'secrets',
        'set',
        sandboxId,
        'TEE_SECRET',
        '--sealed',
        ...target(),
        '--measurement',
        MEASUREMENT,
        ...TEST_ANCHORS(),
      ],
      { ...TEST_ENV, TEE_SECRET: secret },
    );
    expect(sealed.code, sealed.err).toBe(0);
    expect(sealed.out).not.toContain(secret);
    // Without --tee the operator API refuses (a replayed session must not run anything).
    const plain = await cli(['exec', sandboxId, '--operator', operatorUrl, 'printenv TEE_SECRET']);
    expect(plain.code, plain.err).toBe(4);
    expect(plain.err).toContain('--tee');
    const tee = [...target(), '--measurement', MEASUREMENT, ...TEST_ANCHORS()];
    const mark = `cmd-${randomBytes(4).toString('hex')}`;
    const exec = await cli(
      ['exec', sandboxId, '--tee', ...tee, '--', `printenv TEE_SECRET; echo ${mark}-$((6*7))`],
      TEST_ENV,
    );
    expect([exec.code, exec.out], exec.err).toEqual([0, `${secret}\n${mark}-42\n`]);
    const planted = await cli(
      ['exec', sandboxId, '--tee', ...tee, '--', 'printenv PLANTED_BY_CHAIN'],
      TEST_ENV,
    );
    // Not set (the chain's env_json is not applied to a TEE sandbox): printenv exits 1, which the CLI
    // reports as exec's own exit code 7 (the command ran and exited non-zero).
    expect([planted.code, planted.out]).toEqual([7, '']);
    const body = `file-${mark}\n`;
    await writeFile(join(dir, 'up.txt'), body);
    const put = await cli(
      ['files', 'put', sandboxId, join(dir, 'up.txt'), 'tee-e2e/f.txt', '--tee', ...tee],
      TEST_ENV,
    );
    expect(put.code, put.err).toBe(0);
    const get = await cli(
      ['files', 'get', sandboxId, 'tee-e2e/f.txt', join(dir, 'down.txt'), '--tee', ...tee],
      TEST_ENV,
    );
    expect(get.code, get.err).toBe(0);
    expect(readFileSync(join(dir, 'down.txt'), 'utf8')).toBe(body);
    // The host's wire and the operator's log carry none of it.
    for (const seen of [relay!.bytes(), operatorLog()]) {
      // (not 'printenv': the refused plain exec above sent it in the clear, as its user chose)
      for (const plaintext of [secret, mark, body.trim()]) expect(seen).not.toContain(plaintext);
    }
  });

  it('the console verifies it in the browser: verified with the pinned measurement and test root, refused otherwise', async () => {
    expect(sandboxId, 'the CLI test above found the sandbox').not.toBe('');
    expect(
      existsSync(join(ROOT, 'console', 'dist', 'index.html')),
      'npm run build -w @agent-sandbox/console',
    ).toBe(true);
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    });
    try {
      const ctx = await browser.newContext();
      // The wallet: the chain's side of the context (chain id, operator, sandbox) is read through it.
      await injectWallet(ctx, privateKeyToAccount(devnet.accounts.serviceOwner.privateKey), devnet.rpcUrl);
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      // The CLI above signed in as the owner; the page reuses its cached session (the browser sign-in
      // has its own test in console/test, and another one here would cross the auth rate limit).
      const cached = JSON.parse(readFileSync(join(dir, 'cli', 'sessions.json'), 'utf8')) as {
        sessions: Record<string, { address: string; token: string }>;
      };
      const owner = devnet.accounts.serviceOwner.address.toLowerCase();
      const s = Object.values(cached.sessions).find((x) => x.address.toLowerCase() === owner);
      expect(s, 'the CLI cached an owner session').toBeDefined();
      await page.goto(`${operatorUrl}/console/`);
      const store = {
        'agent-sandbox.session': s!.token,
        'agent-sandbox.session.address': s!.address,
        'console.selected': sandboxId,
      };
      await page.evaluate(
        `for (const [k, v] of Object.entries(${JSON.stringify(store)})) sessionStorage.setItem(k, v)`,
      );
      await page.reload();
      await page.getByTestId('tab-Attestation').click();
      // The context comes from the chain and from the user, never from /api/capabilities.
      await page.getByTestId('att-blueprint').fill(devnet.contracts.teeInstance);
      await page.getByTestId('att-service').fill(`${serviceId}`);
      await page.getByTestId('att-operator').fill(devnet.accounts.operator1.address);
      const pki = join(dir, 'pki');
      const verify = async (measurement: string, custom: boolean) => {
        await page.getByTestId('att-allow').fill(measurement);
        if (custom) {
          await page.getByTestId('att-custom').check();
          await page.getByTestId('att-ark').fill(readFileSync(join(pki, 'ark.pem'), 'utf8'));
          await page.getByTestId('att-ask').fill(readFileSync(join(pki, 'ask.pem'), 'utf8'));
        }
        await page.getByTestId('att-verify').click();
        const r = page.getByTestId('att-result');
        await r.or(page.getByTestId('att-error')).waitFor();
        expect(await page.getByTestId('att-error').count(), (await page.textContent('body')) ?? '').toBe(0);
        return { verdict: await r.getAttribute('data-verdict'), text: (await r.textContent()) ?? '' };
      };
      // AMD Milan by default: the test firmware's chain does not close on AMD's root.
      const amd = await verify(MEASUREMENT, false);
      expect(amd.verdict).toBe('unverified');
      expect(amd.text).toMatch(/Refused: the (ARK|ASK|VCEK) /);
      const ok = await verify(MEASUREMENT, true);
      expect(ok.verdict, ok.text).toBe('verified');
      expect(ok.text).toContain(`measurement: ${MEASUREMENT}`);
      expect(ok.text).toMatch(/Binding .*matches/);
      expect(ok.text).toContain('bootloader 3, tee 0, snp 8, microcode 115');
      if (process.env['UPDATE_SCREENSHOTS']) {
        await page.screenshot({ path: join(ROOT, 'docs', 'console', 'attestation.png'), fullPage: true });
      }
      // direct: the owner channel ends in the operator program (the measured TEE side).
      await page.getByTestId('tee-channel-open').waitFor();
      await page.getByTestId('tab-Exec').click();
      await page.getByTestId('tee-tab').waitFor();
      await page.getByTestId('exec-command').fill('echo console-$((6*7))');
      await page.getByTestId('exec-run').click();
      await page.getByTestId('exec-output').filter({ hasText: 'console-42' }).waitFor();
      expect(relay!.bytes()).not.toContain('console-$((6*7))');
      await page.getByTestId('tab-Attestation').click();
      const wrong = await verify('b6'.repeat(48), true);
      expect(wrong.verdict).toBe('measurement_mismatch');
      expect(wrong.text).toContain('not in your allow-list');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("the host, with the owner's session and every relay byte, runs nothing and reads nothing; a refused channel is no downgrade", async () => {
    expect(sandboxId, 'the CLI test above found the sandbox').not.toBe('');
    // What the host saw on the wire: the owner's API session (the CLI cached the same one).
    const cached = JSON.parse(readFileSync(join(dir, 'cli', 'sessions.json'), 'utf8')) as {
      sessions: Record<string, { address: string; token: string }>;
    };
    const owner = devnet.accounts.serviceOwner.address.toLowerCase();
    const token = Object.values(cached.sessions).find((x) => x.address.toLowerCase() === owner)!.token;
    const base = `${operatorUrl}/api/sandboxes/${sandboxId}`;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, text: await r.text() };
    };
    const pwn = `pwn-${randomBytes(4).toString('hex')}`;
    const owned = [
      ['POST', '/exec', { command: `echo ${pwn}; printenv TEE_SECRET` }],
      ['GET', '/files?path=.'],
      ['GET', '/files/content?path=tee-e2e/f.txt'],
      ['POST', '/terminals', {}],
      ['POST', '/prompt', { message: `say ${pwn}` }],
      ['POST', '/secrets', { env: { SANDBOX_AGENT_COMMAND: `curl ${pwn}` } }],
      ['POST', '/members', { address: devnet.accounts.operator1.address }],
      ['POST', '/snapshot', {}],
    ] as const;
    for (const [method, path, body] of owned) {
      const r = await call(method, path, body);
      expect([path, r.status], r.text).toEqual([path, 409]);
      expect(r.text).not.toContain(pwn);
    }
    // Lifecycle and health still answer (availability is the operator's to give).
    expect((await call('GET', '')).status).toBe(200);
    expect((await fetch(`${operatorUrl}/health`)).status).toBe(200);

    // A body the host seals itself to the (public) key, on the plain route: refused.
    const nonce = toHex(new Uint8Array(randomBytes(32)));
    const pk = (await (
      await fetch(`${base}/tee/public-key?nonce=${nonce}`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { pubkey: string; binding: { ctx: string } };
    const sealedByHost = sealSecrets(fromHex(pk.pubkey), pk.binding.ctx, sandboxId, {
      SANDBOX_AGENT_COMMAND: `curl ${pwn}`,
    });
    expect((await call('POST', '/tee/sealed-secrets', sealedByHost)).status).toBe(409);
    // Over the channel with the host's own wallet (the operator's key, say): refused in the enclave.
    const hostWallet = privateKeyToAccount(devnet.accounts.operator1.privateKey);
    const ch = new ChannelClient({
      pubkey: fromHex(pk.pubkey),
      ctx: pk.binding.ctx,
      address: hostWallet.address,
      signMessage: (message) => hostWallet.signMessage({ message }),
      relay: (bytes, type) =>
        fetch(`${base}/tee/channel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': type },
          body: Buffer.from(bytes),
        }),
    });
    expect((await ch.json('POST', '/terminals/commands', { command: `echo ${pwn}` })).status).toBe(403);
    expect((await ch.json('POST', '/tee/sealed-secrets', sealedByHost)).status).toBe(403);

    // The host answers 409 for the channel, hoping the CLI falls back to the plain routes.
    const from = relay!.requests.length;
    relay!.refuseChannel = true;
    try {
      const down = await cli(
        [
          'exec',
          sandboxId,
          '--tee',
          ...target(),
          '--measurement',
          MEASUREMENT,
          ...TEST_ANCHORS(),
          '--',
          `echo ${pwn}`,
        ],
        TEST_ENV,
      );
      expect(down.code).not.toBe(0);
      const sealed = await cli(
        [
          'secrets',
          'set',
          sandboxId,
          'DOWN_SECRET',
          '--sealed',
          ...target(),
          '--measurement',
          MEASUREMENT,
          ...TEST_ANCHORS(),
        ],
        { ...TEST_ENV, DOWN_SECRET: pwn },
      );
      expect(sealed.code).not.toBe(0);
    } finally {
      relay!.refuseChannel = false;
    }
    // What the CLI sent while the channel was refused: nothing in plaintext (the host's own
    // plain calls above carry pwn, so only the requests from then on count).
    for (const r of relay!.requests.slice(from)) expect(r.body, r.path).not.toContain(pwn);
    expect(operatorLog()).not.toContain(pwn);
  });

  it('no quote oracle on direct: a sandbox container, even as root, reaches no configfs-tsm and no dstack socket', async () => {
    // The attacker is whoever runs code in the sandbox (the agent, or a command as root through the
    // sidecar): with the TSM tree it could get genuine reports over a report_data of its choosing.
    const [info] = await docker.listContainers({ filters: { label: [SUITE_LABEL], status: ['running'] } });
    expect(info, 'the instance sandbox runs').toBeDefined();
    const c = docker.getContainer(info!.Id);
    const spec = await c.inspect();
    const tsmRoot = join(dir, 'tsm');
    expect(spec.HostConfig.Privileged).toBe(false);
    expect(spec.HostConfig.CapAdd ?? []).not.toContain('SYS_ADMIN');
    expect(spec.HostConfig.Devices ?? []).toEqual([]);
    for (const m of spec.Mounts) {
      expect(`${m.Source}`, JSON.stringify(m)).not.toContain(tsmRoot);
      expect(`${m.Source} ${m.Destination}`).not.toMatch(/kernel\/config|tsm|dstack/);
    }
    expect(JSON.stringify(spec.Config.Env)).not.toMatch(/TSM|dstack/i);
    const run = async (cmd: string, user: string) => {
      const e = await c.exec({ Cmd: ['sh', '-c', cmd], User: user, AttachStdout: true, AttachStderr: true });
      const stream = await e.start({});
      const chunks: Buffer[] = [];
      stream.on('data', (b: Buffer) => chunks.push(b));
      await new Promise((r) => stream.on('end', r));
      return { code: (await e.inspect()).ExitCode, out: Buffer.concat(chunks).toString('latin1') };
    };
    for (const user of ['0', '1000']) {
      const probe = await run(
        [
          'grep -c configfs /proc/mounts || true',
          'ls -A /sys/kernel/config 2>/dev/null | wc -l',
          `test -e '${tsmRoot}' && echo host-tree || echo no-host-tree`,
          'for p in /run/tee/dstack.sock /var/run/dstack.sock /run/dstack.sock; do test -e $p && echo $p; done | wc -l',
          'mkdir -p /tmp/cfg && mount -t configfs none /tmp/cfg 2>/dev/null && echo mounted || echo no-mount',
        ].join('; '),
        user,
      );
      expect(
        probe.out
          .replace(/[^\x20-\x7e\n]/g, '')
          .trim()
          .split('\n')
          .slice(-5),
        `as uid ${user}`,
      ).toEqual(['0', '0', 'no-host-tree', '0', 'no-mount']);
    }
  });

  it('the user decides what to trust: wrong measurement, real AMD roots, low TCB → exit 8; no allow-list or test anchors outside test mode → exit 1', async () => {
    // In-process CLI (the spawned path is proven above): each case is its own run, concurrently.
    const run = (args: string[], env: Record<string, string> = {}) =>
      runCliInProcess(args, {
        configDir: join(dir, `cli-${randomBytes(4).toString('hex')}`),
        env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.serviceOwner.privateKey, ...env },
      });
    const [wrong, realRoots, tcbTooLow, noList, anchorsOutsideTest, blocked, notMine] = await Promise.all([
      run(['tee', 'verify', ...target(), '--measurement', 'b6'.repeat(48), ...TEST_ANCHORS()], TEST_ENV),
      run(['tee', 'verify', ...target(), '--measurement', MEASUREMENT]),
      run(
        [
          'tee',
          'verify',
          ...target(),
          '--measurement',
          MEASUREMENT,
          '--sev-min-tcb',
          '3:0:9:115',
          ...TEST_ANCHORS(),
        ],
        TEST_ENV,
      ),
      run(['tee', 'verify', ...target(), ...TEST_ANCHORS()], TEST_ENV),
      run(['tee', 'verify', ...target(), '--measurement', MEASUREMENT, ...TEST_ANCHORS()]),
      run(
        [
          'secrets',
          'set',
          sandboxId || 'x',
          'TEE_SECRET',
          '--sealed',
          ...target(),
          '--measurement',
          'b6'.repeat(48),
          ...TEST_ANCHORS(),
        ],
        { ...TEST_ENV, TEE_SECRET: 'never-sent' },
      ),
      // Another wallet: the attestation binds the service owner, so this client refuses it.
      runCliInProcess(['tee', 'verify', ...target(), '--measurement', MEASUREMENT, ...TEST_ANCHORS()], {
        configDir: join(dir, `cli-${randomBytes(4).toString('hex')}`),
        env: { AGENT_SANDBOX_PRIVATE_KEY: devnet.accounts.operator2.privateKey, ...TEST_ENV },
      }),
    ]);
    expect(notMine.code, notMine.err).toBe(8);
    expect(notMine.err).toMatch(/takes orders from 0x[0-9a-f]{40}, not from you/);
    expect(wrong.code).toBe(8);
    expect(wrong.err).toMatch(/measurement_mismatch/);
    expect(realRoots.code).toBe(8);
    expect(tcbTooLow.code).toBe(8);
    expect(tcbTooLow.err).toMatch(/snp 8 is below the minimum 9/);
    expect(noList.code).toBe(1);
    expect(anchorsOutsideTest.code).toBe(1);
    expect(blocked.code).toBe(8);
    expect(operatorLog()).not.toContain('never-sent');
  });
});
