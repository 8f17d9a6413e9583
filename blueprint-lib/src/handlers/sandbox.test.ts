// Jobs 0/1 through the blueprint router, on the shared devnet (real OperatorAssigned/Routed events
// from a fresh service) and the real Docker engine (real SandboxManager, encrypted store on disk).
import { decodeJobResult, type JobContext } from '@agent-sandbox/sdk';
import Docker from 'dockerode';
import pino from 'pino';
import { type Address, encodeAbiParameters, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { blueprintRouter } from '../blueprint-router.ts';
import { BlueprintChain } from '../chain.ts';
import {
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  JSON_OUTPUT,
  SANDBOX_CREATE_INPUT,
  SANDBOX_CREATE_OUTPUT,
  SANDBOX_DELETE_INPUT,
} from '../jobs.ts';
import { DevnetJobs } from '../testing/devnet-service.ts';
import { openTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';
import type { SandboxCreateRequest } from '../validate.ts';

const devnet = inject('devnet');
const image = inject('sandboxImage');
const SECRET = 'cd'.repeat(32);
const RUN = `bl-${Date.now().toString(36)}`;

function request(over: Partial<SandboxCreateRequest> = {}): SandboxCreateRequest {
  return {
    name: 'unit',
    image: '',
    stack: 'default',
    agent_identifier: 'default',
    env_json: '{"GREETING":"hi"}',
    metadata_json: '{"purpose":"test"}',
    ssh_enabled: false,
    ssh_public_key: '',
    web_terminal_enabled: true,
    max_lifetime_seconds: 600n,
    idle_timeout_seconds: 300n,
    cpu_cores: 1n,
    memory_mb: 256n,
    disk_gb: 1n,
    tee_required: false,
    tee_type: 0,
    attestation_nonce: '',
    capabilities_json: '',
    ...over,
  };
}
const flat = (r: SandboxCreateRequest): Hex =>
  encodeAbiParameters(SANDBOX_CREATE_INPUT, SANDBOX_CREATE_INPUT.map((p) => r[p.name]) as never);
const tuple = (r: SandboxCreateRequest): Hex =>
  encodeAbiParameters([{ type: 'tuple', components: SANDBOX_CREATE_INPUT }], [r]);

type Op = TestRuntime;
const openOp = (name: string): Promise<Op> =>
  openTestRuntime({ operatorId: `${RUN}-${name}`, image, secret: SECRET, config: { maxMemoryMb: 2048 } });

let jobs: DevnetJobs;
let main: Op;
let spare: Op;
const chain = new BlueprintChain({ httpRpcUrl: devnet.rpcUrl, blueprint: devnet.contracts.cloud });

function routerFor(op: Op, operator: Address, sshOffered?: boolean) {
  return blueprintRouter({
    operator,
    mode: 'cloud',
    chain,
    sandboxes: op.manager,
    store: op.store,
    policy: {
      defaultImage: image,
      imageAllowlist: ['agent-sandbox-allowed-but-absent:1'],
      shapes: {
        presets: { default: { cpuCores: 1, memoryMb: 1024, diskGb: 5 } },
        defaultPreset: 'default',
        ceiling: { cpuCores: 2, memoryMb: 2048, diskGb: 10 },
      },
      teeAvailable: false,
      ...(sshOffered === undefined ? {} : { sshOffered }),
    },
    operatorApiUrl: 'http://127.0.0.1:9999',
  }).router;
}

function ctx(
  call: { callId: bigint; blockNumber: bigint; transactionHash: Hex },
  jobIndex: number,
  log: JobContext['log'] = pino({ level: 'silent' }),
): JobContext {
  return {
    serviceId: jobs.serviceId,
    callId: call.callId,
    jobIndex,
    caller: jobs.caller.address,
    blockNumber: call.blockNumber,
    transactionHash: call.transactionHash,
    log,
    signal: new AbortController().signal,
  };
}

async function create(
  input: Hex,
  op: Op = main,
  as?: Address,
  log?: JobContext['log'],
  sshOffered?: boolean,
) {
  const call = await jobs.submit(JOB_SANDBOX_CREATE, input);
  const operator = as ?? call.operator!;
  const outcome = await routerFor(op, operator, sshOffered).dispatch(
    { jobIndex: JOB_SANDBOX_CREATE, input },
    ctx(call, JOB_SANDBOX_CREATE, log),
  );
  return { call, operator, outcome };
}

function createOutput(outcome: Awaited<ReturnType<typeof create>>['outcome']) {
  if (outcome.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  const v = decodeJobResult(SANDBOX_CREATE_OUTPUT, outcome.output);
  return { sandboxId: v.sandboxId, json: JSON.parse(v.json) as Record<string, unknown>, hex: outcome.output };
}

beforeAll(async () => {
  jobs = new DevnetJobs(devnet);
  await jobs.newCloudService();
  main = await openOp('main');
  spare = await openOp('spare');
});

afterAll(async () => {
  for (const op of [main, spare]) await op?.close();
  const docker = new Docker();
  const left = await docker.listContainers({
    all: true,
    filters: { label: ['agent-sandbox.test.suite=blueprint-lib'] },
  });
  for (const c of left)
    if (Object.values(c.Labels).some((v) => v.startsWith(RUN)))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
});

describe('SANDBOX_CREATE and SANDBOX_DELETE', () => {
  it('provisions on the assigned operator only; the result names the sandbox and never the token; a redelivery makes nothing new; delete removes it', async () => {
    const input = flat(request({ name: 'e2e-unit', metadata_json: '{"ports":[3000],"team":"a"}' }));
    const { call, operator, outcome } = await create(input);
    const out = createOutput(outcome);
    expect(out.sandboxId).toMatch(/^sbx-[0-9a-f]{32}$/);
    expect(out.json).toMatchObject({
      sandboxId: out.sandboxId,
      operatorApiUrl: 'http://127.0.0.1:9999',
      state: 'running',
      operator,
    });
    const rec = main.manager.get(out.sandboxId);
    expect(rec.owner.toLowerCase()).toBe(jobs.caller.address.toLowerCase());
    // metadata_json "ports" reach the runtime: published on loopback for the port proxy.
    expect(rec.exposedPorts).toEqual([3000]);
    expect(rec.metadata).toMatchObject({ team: 'a' });
    expect((await main.manager.exposedPort(out.sandboxId, 3000)).host).toBe('127.0.0.1');
    // The sidecar token exists only in the encrypted store, never in the result (hex or text).
    expect(rec.token).toMatch(/^[0-9a-f]{64}$/);
    expect(out.hex.toLowerCase()).not.toContain(rec.token);
    expect(JSON.stringify(out.json)).not.toContain(rec.token);
    expect(Buffer.from(out.hex.slice(2), 'hex').toString('latin1')).not.toContain(rec.token);

    // The other operator skips the same call (its own store, as on its own machine).
    const other = await routerFor(spare, jobs.otherOperator(operator)).dispatch(
      { jobIndex: 0, input },
      ctx(call, 0),
    );
    expect(other).toEqual({ kind: 'skip', reason: 'handler-skipped' });

    // Redelivered: the same answer, still one sandbox for the call.
    const again = await routerFor(main, operator).dispatch({ jobIndex: 0, input }, ctx(call, 0));
    expect(again).toEqual(outcome);
    expect(main.manager.list().filter((r) => r.callId === `${call.callId}`)).toHaveLength(1);

    // Post the result as the operator would, so the blueprint records the sandbox and routes a delete.
    await jobs.submitResult(operator, call.callId, out.hex);
    const delInput = encodeAbiParameters(SANDBOX_DELETE_INPUT, [out.sandboxId]);
    const del = await jobs.submit(JOB_SANDBOX_DELETE, delInput);
    expect(del.operator?.toLowerCase()).toBe(operator.toLowerCase());

    // An operator that does not know the sandbox answers with a clear error.
    const unknown = await routerFor(spare, operator).dispatch({ jobIndex: 1, input: delInput }, ctx(del, 1));
    expect(unknown.kind).toBe('result');
    const uj = JSON.parse(decodeJobResult(JSON_OUTPUT, (unknown as { output: Hex }).output).json);
    expect(uj).toMatchObject({ code: 'NOT_FOUND', sandboxId: out.sandboxId });
    expect(uj.error).toContain('not known to operator');

    const done = await routerFor(main, operator).dispatch({ jobIndex: 1, input: delInput }, ctx(del, 1));
    const dj = JSON.parse(decodeJobResult(JSON_OUTPUT, (done as { output: Hex }).output).json);
    expect(dj).toMatchObject({ sandboxId: out.sandboxId, deleted: true });
    expect(() => main.manager.get(out.sandboxId)).toThrow(/does not exist/);
    const gone = await new Docker().listContainers({
      all: true,
      filters: { label: [`agent-sandbox.id=${out.sandboxId}`] },
    });
    expect(gone).toHaveLength(0);
  });

  it("SANDBOX_SSH=false: the create's key is kept but the result says SSH is off (the operator offers none)", async () => {
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIzfzkgo31RUoOOMVhyzSmvJ/h2rJdiQrc8DupGUQ0Zr t@test';
    const req = request({ name: 'ssh-off', ssh_enabled: true, ssh_public_key: key });
    const { outcome } = await create(flat(req), main, undefined, undefined, false);
    const out = createOutput(outcome);
    expect(out.json.ssh).toEqual({ requested: true, enabled: false });
    expect(main.manager.get(out.sandboxId).sshKeys).toHaveLength(1);
    // The later cases count the operator's sandboxes.
    await main.manager.delete(out.sandboxId);
  });

  it('decodes the flat and the tuple encoding to the same request', async () => {
    const r = request({ image: 'not-on-the-list:1' });
    expect(tuple(r)).not.toBe(flat(r));
    const a = createOutput((await create(flat(r))).outcome);
    const b = createOutput((await create(tuple(r))).outcome);
    for (const o of [a, b]) {
      expect(o.sandboxId).toBe('');
      expect(o.json).toMatchObject({ code: 'IMAGE_NOT_ALLOWED', phase: 'validation' });
      expect(o.json['error']).toContain('not-on-the-list:1');
    }
  });

  it('refuses oversize resources, bad JSON fields and long names with a readable result', async () => {
    const cases: Array<[Partial<SandboxCreateRequest>, string, string]> = [
      [{ cpu_cores: 64n }, 'RESOURCES_EXCEED_LIMIT', 'cpu_cores'],
      [{ memory_mb: 2n ** 63n }, 'RESOURCES_EXCEED_LIMIT', 'memory_mb'],
      [{ disk_gb: 11n }, 'RESOURCES_EXCEED_LIMIT', 'disk_gb'],
      [{ env_json: '[1,2]' }, 'INVALID_REQUEST', 'env_json'],
      [{ env_json: '{not json' }, 'INVALID_REQUEST', 'env_json'],
      [{ metadata_json: '{"n":1}' }, 'INVALID_REQUEST', 'metadata_json'],
      [{ metadata_json: '{"ports":[0]}' }, 'INVALID_REQUEST', 'metadata_json'],
      [{ metadata_json: '{"ports":"3000"}' }, 'INVALID_REQUEST', 'metadata_json'],
      [{ metadata_json: '{"ports":[3000],"n":1}' }, 'INVALID_REQUEST', 'metadata_json'],
      [{ name: 'x'.repeat(65) }, 'INVALID_REQUEST', 'name'],
      [{ agent_identifier: 'a'.repeat(129) }, 'INVALID_REQUEST', 'agent_identifier'],
      [{ capabilities_json: '{"shape":"huge"}' }, 'INVALID_REQUEST', 'shape'],
      [{ capabilities_json: '{"sizes":"big"}' }, 'INVALID_REQUEST', 'capabilities_json'],
      [{ capabilities_json: '{not json' }, 'INVALID_REQUEST', 'capabilities_json'],
      [{ capabilities_json: '{"agent":false,"startup_script":"make"}' }, 'INVALID_REQUEST', 'startup_script'],
      [
        { capabilities_json: '{"network":{"mode":"strict","allow_domains":["10.0.0.1"]}}' },
        'INVALID_REQUEST',
        'capabilities_json.network',
      ],
    ];
    for (const [over, code, field] of cases) {
      const o = createOutput((await create(flat(request(over)))).outcome);
      expect(o.sandboxId, field).toBe('');
      expect(o.json, field).toMatchObject({ code, phase: 'validation' });
      expect(String(o.json['error']), field).toContain(field);
    }
    // The refusal on chain names the field and the ceiling (issue 26: "on chain too").
    const over = createOutput((await create(flat(request({ cpu_cores: 64n, disk_gb: 11n })))).outcome);
    expect(over.json['error']).toContain('cpu_cores 64 > ceiling 2 cores, disk_gb 11 > ceiling 10 GB');
    expect(main.manager.list()).toHaveLength(0);
  });

  it('a create naming a platform-owned env key is refused with the key and why in the chain result', async () => {
    for (const key of ['SIDECAR_AGENT_COMMAND', 'LD_PRELOAD', 'NODE_OPTIONS']) {
      const o = createOutput(
        (await create(flat(request({ env_json: JSON.stringify({ [key]: 'x' }) })))).outcome,
      );
      expect(o.sandboxId, key).toBe('');
      expect(o.json, key).toMatchObject({ code: 'VALIDATION', phase: 'admission' });
      expect(String(o.json['error']), key).toContain(`env_json.${key}`);
      expect(String(o.json['error']), key).toMatch(/owned by the platform/);
    }
    expect(main.manager.list()).toHaveLength(0);
  });

  it('posts a failed provision with its phase, and the provision record keeps the reason', async () => {
    const { call, outcome } = await create(flat(request({ image: 'agent-sandbox-allowed-but-absent:1' })));
    const o = createOutput(outcome);
    expect(o.sandboxId).toBe('');
    expect(o.json).toMatchObject({ code: 'IMAGE_NOT_FOUND', phase: 'image_pull' });
    // Our own short text on chain, not the engine's (the provision record keeps that, off chain).
    expect(o.json['error']).toBe('the image is not available on this operator; ask which images it serves');
    const p = await main.manager.getProvision(`${call.callId}`);
    expect(p.phase).toBe('failed');
    expect(p.error).toContain('agent-sandbox-allowed-but-absent:1');
  });

  it('logs every provisioning phase as the runtime enters it, in order (pushed by the runtime, not polled)', async () => {
    const lines: Array<{ msg: string; phase?: string }> = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const { call, outcome } = await create(flat(request({ name: 'phases' })), main, undefined, log);
    const out = createOutput(outcome);
    const logged = lines.filter((l) => l.msg === 'provisioning progress').map((l) => l.phase);
    // Every phase the runtime recorded after admission, none missed between two polls.
    const recorded = (await main.manager.getProvision(`${call.callId}`, `${jobs.serviceId}`)).phases
      .map((p) => p.phase)
      .filter((p) => p !== 'queued');
    expect(recorded).toEqual(['image_pull', 'container_create', 'container_start', 'health_check', 'ready']);
    expect(logged).toEqual(recorded);
    await main.manager.delete(out.sandboxId);
  });

  it("a fork on chain: one of the caller's own is copied (new id, no secret); another owner's sandbox or snapshot is refused by name", async () => {
    /** Runs a command in a sandbox through its sidecar (the real HTTP contract). */
    const sh = async (id: string, command: string) => {
      const ep = main.manager.sidecarEndpoint(id);
      const res = await fetch(`${ep.url}/terminals/commands`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ep.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command }),
      });
      return ((await res.json()) as { result: { stdout: string } }).result.stdout;
    };
    const mallory = '0x00000000000000000000000000000000000000e7';
    const theirs = await main.manager.create({
      owner: mallory,
      serviceId: `${jobs.serviceId}`,
      callId: 'fork-theirs',
    });
    const theirSnap = await main.manager.snapshot(theirs.id);
    const mine = await main.manager.create({
      owner: jobs.caller.address,
      serviceId: `${jobs.serviceId}`,
      callId: 'fork-mine',
    });
    await sh(mine.id, 'echo mine > /home/agent/m.txt');
    await main.manager.injectSecrets(mine.id, { API_KEY: 'sk-chain-fork-secret' });
    const before = main.manager.list().length;
    for (const caps of [{ from_sandbox: theirs.id }, { from_snapshot: theirSnap.snapshotImageId }]) {
      const o = createOutput(
        (await create(flat(request({ capabilities_json: JSON.stringify(caps) })))).outcome,
      );
      expect(o.sandboxId).toBe('');
      expect(o.json).toMatchObject({ code: 'SOURCE_NOT_FOUND', phase: 'admission' });
      expect(String(o.json['error'])).toMatch(/only your own can be copied/);
    }
    expect(main.manager.list()).toHaveLength(before);

    const { outcome } = await create(
      flat(request({ capabilities_json: JSON.stringify({ from_sandbox: mine.id }) })),
    );
    const out = createOutput(outcome);
    expect(out.sandboxId).toMatch(/^sbx-[0-9a-f]{32}$/);
    expect(out.sandboxId).not.toBe(mine.id);
    expect(out.json).toMatchObject({ state: 'running', image: mine.image });
    const fork = main.manager.get(out.sandboxId);
    expect(fork.source).toEqual({ kind: 'sandbox', sandboxId: mine.id });
    expect(fork.userEnv).toEqual({});
    expect(fork.token).not.toBe(mine.token);
    expect(await sh(fork.id, 'cat /home/agent/m.txt; echo "[$API_KEY]"')).toBe('mine\n[]\n');
    const phases = (await main.manager.getProvision(fork.callId, fork.serviceId)).phases.map((p) => p.phase);
    expect(phases).toContain('workspace_copy');
    for (const id of [fork.id, mine.id, theirs.id]) await main.manager.delete(id);
  });

  it('skips input that is neither encoding, without touching anything', async () => {
    const call = await jobs.submit(JOB_SANDBOX_CREATE, flat(request({ image: 'x:1' })));
    const bad = await routerFor(main, call.operator!).dispatch(
      { jobIndex: 0, input: '0x1234' },
      ctx(call, 0),
    );
    expect(bad.kind).toBe('skip');
    expect((bad as { reason: string }).reason).toBe('bad-input');
  });
});
