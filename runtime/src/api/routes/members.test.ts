// Team access, attacked: a member uses the sandbox as themselves (exec, terminals, files) and
// nothing that is the owner's (members, secrets, preview links); a removed member loses access
// at once, an open terminal stream included; another tenant is a member of nothing, however they
// guess. All of these failed before team access existed (routes absent, streams not cut).
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../testing/harness.ts';
import { assertNoLeaks } from '../testing/leaks.ts';

type Who = Awaited<ReturnType<Harness['newOwner']>>;

describe('team access', () => {
  let h: Harness;
  let owner: Who;
  let member: Who;
  let tenant: Who;
  let id: string;
  let solo: string;
  let theirs: string;
  beforeAll(async () => {
    h = await startHarness({ config: { rateLimits: { write: 1000, read: 1000, auth: 100 } } });
    [owner, member, tenant] = [await h.newOwner(), await h.newOwner(), await h.newOwner()];
    id = h.addSandbox(owner.address).id;
    solo = h.addSandbox(owner.address).id;
    theirs = h.addSandbox(tenant.address).id;
  });
  afterAll(async () => {
    assertNoLeaks(h, [], [owner.token, member.token, tenant.token]);
    await h.close();
  });
  const exec = (who: Who, sid = id) =>
    h.call('POST', `/api/sandboxes/${sid}/exec`, { token: who.token, body: { command: 'echo hi' } });
  const members = (who: Who, sid = id) =>
    h.call('GET', `/api/sandboxes/${sid}/members`, { token: who.token });

  it('before being added, a wallet is refused (403) and is not listed', async () => {
    expect((await exec(member)).status).toBe(403);
    const list = await h.call('GET', '/api/sandboxes?scope=all', { token: member.token });
    expect(list.json.sandboxes).toEqual([]);
  });

  it('the owner adds a member (address checked, idempotent); the member uses the sandbox as themselves', async () => {
    const bad = await h.call('POST', `/api/sandboxes/${id}/members`, {
      token: owner.token,
      body: { address: 'not-an-address' },
    });
    expect(bad.status).toBe(400);
    const self = await h.call('POST', `/api/sandboxes/${id}/members`, {
      token: owner.token,
      body: { address: owner.address },
    });
    expect(self.status).toBe(400);
    expect(self.json.error.message).toMatch(/owner/);
    for (let i = 0; i < 2; i++) {
      const add = await h.call('POST', `/api/sandboxes/${id}/members`, {
        token: owner.token,
        body: { address: member.address.toUpperCase().replace('0X', '0x') },
      });
      expect(add.status).toBe(200);
      expect(add.json).toEqual({ sandbox_id: id, owner: owner.address, members: [member.address] });
    }
    expect((await exec(member)).status).toBe(200);
    expect((await h.call('GET', `/api/sandboxes/${id}`, { token: member.token })).json).toMatchObject({
      id,
      role: 'member',
      members: [member.address],
    });
    expect(
      (await h.call('GET', `/api/sandboxes/${id}/files?path=/home/agent`, { token: member.token })).status,
    ).not.toBe(403);
    expect(
      (await h.call('POST', `/api/sandboxes/${id}/terminals`, { token: member.token, body: {} })).status,
    ).toBe(200);
    expect((await members(member)).json.members).toEqual([member.address]);
  });

  it('list scopes: personal = yours without members, team = shared ones you own or belong to, all = both', async () => {
    const ids = async (who: Who, scope?: string) => {
      const r = await h.call('GET', `/api/sandboxes${scope ? `?scope=${scope}` : ''}`, { token: who.token });
      expect(r.status).toBe(200);
      return (r.json.sandboxes as Array<{ id: string; role: string }>).map((s) => `${s.id}:${s.role}`).sort();
    };
    expect(await ids(owner, 'personal')).toEqual([`${solo}:owner`]);
    expect(await ids(owner, 'team')).toEqual([`${id}:owner`]);
    expect(await ids(owner, 'all')).toEqual([`${id}:owner`, `${solo}:owner`].sort());
    expect(await ids(owner)).toEqual(await ids(owner, 'all'));
    expect(await ids(member, 'personal')).toEqual([]);
    expect(await ids(member, 'team')).toEqual([`${id}:member`]);
    expect(await ids(tenant, 'all')).toEqual([`${theirs}:owner`]);
    const bad = await h.call('GET', '/api/sandboxes?scope=everyone', { token: owner.token });
    expect(bad.status).toBe(400);
  });

  it('a member cannot manage members, read or set secrets, or create preview links', async () => {
    const other = await h.newOwner();
    const attempts: Array<[string, string, unknown?]> = [
      ['POST', `/api/sandboxes/${id}/members`, { address: other.address }],
      ['DELETE', `/api/sandboxes/${id}/members/${member.address}`],
      ['GET', `/api/sandboxes/${id}/secrets`],
      ['POST', `/api/sandboxes/${id}/secrets`, { env: { K: 'v' } }],
      ['DELETE', `/api/sandboxes/${id}/secrets`],
      ['POST', `/api/sandboxes/${id}/preview-links`, { port: 3000 }],
      ['GET', `/api/sandboxes/${id}/preview-links`],
    ];
    for (const [method, path, body] of attempts) {
      const r = await h.call(method, path, { token: member.token, ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.json.error.code).toBe('FORBIDDEN');
    }
    expect((await members(owner)).json.members).toEqual([member.address]);
    // The sandbox view a member gets names no secret (the owner's view does).
    expect(
      (
        await h.call('POST', `/api/sandboxes/${id}/secrets`, {
          token: owner.token,
          body: { env: { OWNER_KEY: 'v' } },
        })
      ).status,
    ).toBe(200);
    expect((await h.call('GET', `/api/sandboxes/${id}`, { token: owner.token })).json.secret_names).toEqual([
      'OWNER_KEY',
    ]);
    const view = await h.call('GET', `/api/sandboxes/${id}`, { token: member.token });
    expect(view.json.secret_names).toEqual([]);
  });

  it('another tenant is a member of nothing: not by adding themselves, not by guessing ids', async () => {
    const self = await h.call('POST', `/api/sandboxes/${id}/members`, {
      token: tenant.token,
      body: { address: tenant.address },
    });
    expect(self.status).toBe(403);
    expect((await exec(tenant)).status).toBe(403);
    expect((await members(tenant)).status).toBe(403);
    // Their own sandbox lists no one, and the owner cannot add to a sandbox that is not theirs.
    expect((await members(tenant, theirs)).json.members).toEqual([]);
    const into = await h.call('POST', `/api/sandboxes/${theirs}/members`, {
      token: owner.token,
      body: { address: owner.address },
    });
    expect(into.status).toBe(403);
    for (let i = 0; i < 20; i++) {
      const guess = `sbx-${Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32)}`;
      expect((await exec(tenant, guess)).status).toBe(404);
    }
  });

  it("a removed member's live session loses access at once: requests and an open terminal stream", async () => {
    const created = await h.call('POST', `/api/sandboxes/${id}/terminals`, { token: member.token, body: {} });
    const tid = created.json.sessionId as string;
    const res = await fetch(`${h.url}/api/sandboxes/${id}/terminals/${tid}/stream`, {
      headers: { authorization: `Bearer ${member.token}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const input = await h.call('POST', `/api/sandboxes/${id}/terminals/${tid}/input`, {
      token: member.token,
      body: { data: 'before\n' },
    });
    expect(input.status).toBe(200);
    let text = '';
    while (!text.includes('before')) text += new TextDecoder().decode((await reader.read()).value);

    const removed = await h.call('DELETE', `/api/sandboxes/${id}/members/${member.address}`, {
      token: owner.token,
    });
    expect(removed.status).toBe(200);
    expect(removed.json.members).toEqual([]);
    // The stream ends without another byte of the PTY reaching the removed member.
    h.sidecar.writeTerminal('after-removal');
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).not.toContain('after-removal');
    expect((await exec(member)).status).toBe(403);
    expect((await h.call('GET', `/api/sandboxes/${id}`, { token: member.token })).status).toBe(403);
    expect(
      (await h.call('GET', '/api/sandboxes?scope=team', { token: member.token })).json.sandboxes,
    ).toEqual([]);
    // Removing someone who is not a member is a 404 naming it; the owner keeps access.
    const again = await h.call('DELETE', `/api/sandboxes/${id}/members/${member.address}`, {
      token: owner.token,
    });
    expect(again.status).toBe(404);
    expect((await exec(owner)).status).toBe(200);
  });

  it("a member's own port preview works while it is a member and closes when it is removed", async () => {
    const app = createServer((req, res) => res.end(`app ${req.url}`));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    try {
      h.sandboxes.exposed.set(id, new Map([[3000, (app.address() as AddressInfo).port]]));
      await h.call('POST', `/api/sandboxes/${id}/members`, {
        token: owner.token,
        body: { address: member.address },
      });
      const p = await h.call('POST', `/api/sandboxes/${id}/previews`, {
        token: member.token,
        body: { port: 3000 },
      });
      expect(p.status).toBe(200);
      const u = new URL(p.json.url);
      const onHost = (path: string, cookie?: string) =>
        new Promise<{ status: number; cookie: string; text: string }>((resolve, reject) => {
          const api = new URL(h.url);
          const req = request(
            {
              host: api.hostname,
              port: api.port,
              path,
              headers: { host: u.host, ...(cookie ? { cookie } : {}) },
            },
            (res) => {
              let text = '';
              res.on('data', (d: Buffer) => {
                text += d.toString();
              });
              res.on('end', () =>
                resolve({
                  status: res.statusCode ?? 0,
                  cookie: String(res.headers['set-cookie'] ?? ''),
                  text,
                }),
              );
            },
          );
          req.on('error', reject);
          req.end();
        });
      const cookie = (await onHost(`${u.pathname}${u.search}`)).cookie.split(';')[0]!;
      expect((await onHost('/x', cookie)).text).toBe('app /x');
      await h.call('DELETE', `/api/sandboxes/${id}/members/${member.address}`, { token: owner.token });
      expect((await onHost('/x', cookie)).status).toBe(401);
    } finally {
      app.close();
    }
  });
});
