// The owner reads workflows and their runs; another wallet reads nothing of them (403 on a
// workflow it does not own, as on a sandbox it does not own; its list is empty), and the routes
// are in the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';

describe('workflow routes', () => {
  let h: Harness;
  let owner: Awaited<ReturnType<Harness['newOwner']>>;
  let other: Awaited<ReturnType<Harness['newOwner']>>;
  let sbx: string;
  beforeAll(async () => {
    h = await startHarness({ config: { rateLimits: { write: 1000, read: 1000 } } });
    owner = await h.newOwner();
    other = await h.newOwner();
    sbx = h.addSandbox(owner.address).id;
    await h.api.workflows.create({
      workflowId: '41',
      serviceId: '1',
      owner: owner.address,
      name: 'nightly',
      workflowJson: '{"command":"echo from-the-workflow"}',
      triggerType: 'cron',
      triggerConfig: '{"cron":"0 3 * * *","timezone":"Europe/Paris"}',
      targetKind: 0,
      targetSandboxId: sbx,
    });
    const run = await h.api.workflows.trigger('1', '41', '77');
    await h.api.workflows.settled(run.runId);
  });
  afterAll(async () => {
    await h.close();
  });

  it('the owner lists, reads and reads the runs of a workflow (status, exit code, output, timestamps)', async () => {
    const list = await h.call('GET', '/api/workflows', { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.json.workflows).toHaveLength(1);
    expect(list.json.workflows[0]).toMatchObject({
      workflow_id: '41',
      name: 'nightly',
      active: true,
      target_sandbox_id: sbx,
      trigger_type: 'cron',
      next_due_at: expect.any(Number),
    });
    const one = await h.call('GET', '/api/workflows/41', { token: owner.token });
    expect(one.json).toMatchObject({ workflow_id: '41', runs: 1 });
    const runs = await h.call('GET', '/api/workflows/41/runs', { token: owner.token });
    expect(runs.status).toBe(200);
    expect(runs.json.runs[0]).toMatchObject({
      trigger: 'manual',
      call_id: '77',
      kind: 'command',
      status: 'completed',
      exit_code: 0,
      stdout: expect.stringContaining('from-the-workflow'),
      started_at: expect.any(Number),
      finished_at: expect.any(Number),
    });
  });

  it('another wallet: an empty list, 403 on the workflow and its runs; unknown → 404; no session → 401', async () => {
    const list = await h.call('GET', '/api/workflows', { token: other.token });
    expect(list.status).toBe(200);
    expect(list.json.workflows).toEqual([]);
    for (const path of ['/api/workflows/41', '/api/workflows/41/runs']) {
      const r = await h.call('GET', path, { token: other.token });
      expect(r.status).toBe(403);
      expect(r.json.error.code).toBe('FORBIDDEN');
      expect(r.text).not.toContain('from-the-workflow');
    }
    expect((await h.call('GET', '/api/workflows/999', { token: owner.token })).status).toBe(404);
    expect((await h.call('GET', '/api/workflows/41/runs')).status).toBe(401);
    expect((await h.call('GET', '/api/workflows/abc', { token: owner.token })).status).toBe(400);
  });

  it('a session scoped to another sandbox sees none of them', async () => {
    const scoped = await h.signIn(owner.account, 'sandbox:sbx-elsewhere');
    expect((await h.call('GET', '/api/workflows', { token: scoped })).json.workflows).toEqual([]);
    expect((await h.call('GET', '/api/workflows/41/runs', { token: scoped })).status).toBe(403);
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await h.call('GET', '/api/openapi.json')).json;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/workflows', '/api/workflows/{id}', '/api/workflows/{id}/runs']),
    );
    expect(doc.components.schemas).toHaveProperty('WorkflowRun');
  });
});
