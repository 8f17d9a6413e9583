// Instance-target workflows end to end, called from instance.test.ts with its running operator:
// `agent-sandbox workflow … --instance S` as the service owner (jobs on service S, runs in the
// instance sandbox, read back from the operator that reported it) and as another wallet.
import { OperatorClient } from '@agent-sandbox/client';
import { privateKeyToAccount } from 'viem/accounts';
import { expect, inject, vi } from 'vitest';
import { INSTANCE_SANDBOX } from '../../client/src/cli/args.ts';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';

/**
 * Workflows on the instance through the CLI (`workflow … --instance S`, jobs on service S): a
 * command run's exit code and output, a prompt run's events streamed, another wallet refused, cancel.
 */
export async function instanceWorkflows(o: {
  serviceId: bigint;
  sandboxId: string;
  url: string;
  /** --instance S and the chain flags. */
  chainArgs: string[];
  configDir: (name: string) => string;
  /** The operator's log tail, for failure messages. */
  log: () => string;
}): Promise<void> {
  const { sandboxId, url } = o;
  const devnet = inject('devnet');
  const wf = (args: string[], key = devnet.accounts.serviceOwner.privateKey, cfg = 'cli') =>
    runCliInProcess(['workflow', ...args, ...o.chainArgs], {
      configDir: o.configDir(cfg),
      env: { AGENT_SANDBOX_PRIVATE_KEY: key },
    });
  const ok = async (p: ReturnType<typeof wf>) => {
    const r = await p;
    expect(r.code, `${r.err}\n${o.log()}`).toBe(0);
    return r.out;
  };
  const settled = async (id: string) => {
    let runs: Array<Record<string, unknown>> = [];
    await vi.waitFor(
      async () => {
        runs = JSON.parse(await ok(wf(['runs', id, '--json'])));
        expect(runs.length && runs.every((r) => r['status'] !== 'running')).toBeTruthy();
      },
      { timeout: 60_000, interval: 200 },
    );
    return runs;
  };
  const created = JSON.parse(
    await ok(wf(['create', '--json', '--name', 'inst-cat', '--command', 'cat notes.txt; exit 3'])),
  ) as { workflow_id: string; result: Record<string, unknown> };
  const id = created.workflow_id;
  expect(created.result).toMatchObject({ stored: true, targetSandboxId: '' });
  expect(await ok(wf(['trigger', id]))).toMatch(/^wfr-\S+\t(running|completed|failed)/);
  const [run] = await settled(id);
  expect(run).toMatchObject({ kind: 'command', exit_code: 3, sandbox_id: sandboxId });
  expect(run!['stdout']).toBe('kept-across-restarts\n');
  const text = await ok(wf(['runs', id, '--output']));
  expect(text).toMatch(/\texit 3\t/);
  expect(text).toContain('kept-across-restarts');

  // A prompt workflow: its agent run's events stream from the instance's run API.
  const ask = JSON.parse(
    await ok(wf(['create', '--json', '--name', 'inst-ask', '--prompt', 'what is in my workspace?'])),
  ) as { workflow_id: string };
  await ok(wf(['trigger', ask.workflow_id]));
  const [arun] = await settled(ask.workflow_id);
  expect(arun).toMatchObject({ kind: 'prompt', status: 'completed', sandbox_id: sandboxId });
  const owner = new OperatorClient({
    baseUrl: url,
    mode: 'instance',
    account: privateKeyToAccount(devnet.accounts.serviceOwner.privateKey),
  });
  const events: string[] = [];
  let final = '';
  for await (const ev of owner.runEvents(INSTANCE_SANDBOX, arun!['agent_run_id'] as string)) {
    events.push(ev.event);
    if (ev.event === 'run.completed') final = JSON.stringify(ev.data);
  }
  expect(events.at(-1)).toBe('run.completed');
  expect(events.length).toBeGreaterThan(1);
  expect(final).toContain('Final answer: your message has 5 words');

  // Another wallet: reads nothing, and the chain refuses its trigger and cancel.
  const user = devnet.accounts.user.privateKey;
  expect((await wf(['runs', id, '--json'], user, 'cli-stranger')).code).toBe(2);
  for (const action of ['trigger', 'cancel']) {
    const r = await wf([action, id], user, 'cli-stranger');
    expect(r.code, r.err).not.toBe(0);
  }
  expect(await settled(id)).toHaveLength(1);

  await ok(wf(['cancel', id]));
  expect(await ok(wf(['list']))).toMatch(
    new RegExp(`^${id}\tinst-cat\tcanceled\tmanual\tinstance\truns 1$`, 'm'),
  );
  expect((await wf(['trigger', id])).code).not.toBe(0);
}
