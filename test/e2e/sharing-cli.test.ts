// The sharing commands end to end: the real CLI (in-process) against the real operator API (the
// runtime's harness: real sessions, store and routes), as the owner, a member and a stranger:
// `members add|list|remove`, `list --scope`, `preview create|list|revoke`, with their refusals.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Harness, startHarness } from '@agent-sandbox/runtime/testing';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../client/src/testing/cli-harness.ts';

describe('agent-sandbox members / preview / list --scope', () => {
  let h: Harness;
  let configDir: string;
  let id: string;
  const ownerKey = generatePrivateKey();
  const memberKey = generatePrivateKey();
  const member = privateKeyToAccount(memberKey).address;
  const owner = privateKeyToAccount(ownerKey).address;
  const cli = (key: string, ...argv: string[]) =>
    runCliInProcess(['--operator', h.url, '--private-key', key, ...argv], { configDir });

  beforeAll(async () => {
    h = await startHarness({
      config: { previewLinks: { enabled: true }, rateLimits: { write: 1000, read: 1000, auth: 100 } },
    });
    configDir = await mkdtemp(join(tmpdir(), 'sharing-cli-'));
    id = h.addSandbox(owner.toLowerCase(), { exposedPorts: [3000] }).id;
  });
  afterAll(async () => {
    await h.close();
    await rm(configDir, { recursive: true, force: true });
  });

  it('members: add, list (owner and member), scopes, remove; a member cannot add', async () => {
    expect((await cli(memberKey, 'list', '--scope', 'team', '--json')).out.trim()).toBe('[]');
    const add = await cli(ownerKey, 'members', 'add', id, member);
    expect(add).toMatchObject({ code: 0 });
    expect(add.out).toBe(`${member.toLowerCase()} added to ${id}\n`);
    expect((await cli(memberKey, 'members', 'list', id)).out).toBe(`${member.toLowerCase()}\n`);
    const team = JSON.parse((await cli(memberKey, 'list', '--scope', 'team', '--json')).out);
    expect(team).toEqual([expect.objectContaining({ id, role: 'member' })]);
    expect(JSON.parse((await cli(ownerKey, 'list', '--scope', 'personal', '--json')).out)).toEqual([]);
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const refused = await cli(memberKey, 'members', 'add', id, stranger);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/only the sandbox's owner may add members.*\(code FORBIDDEN/);
    const bad = await cli(ownerKey, 'members', 'add', id, 'alice');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/0x followed by 40 hex digits/);
    expect((await cli(ownerKey, 'list', '--scope', 'everyone')).err).toMatch(
      /--scope must be personal, team or all/,
    );
    expect((await cli(ownerKey, 'members', 'remove', id, member)).out).toBe(
      `${member.toLowerCase()} removed from ${id}\n`,
    );
    expect((await cli(memberKey, 'members', 'list', id)).code).toBe(2);
  });

  it('preview: create prints the URL once, list shows no token, revoke; members and bad ports refused', async () => {
    const created = await cli(ownerKey, 'preview', 'create', id, '--port', '3000', '--expires', '600');
    expect(created.code).toBe(0);
    const url = created.out.trim();
    expect(url).toMatch(
      new RegExp(`^http://p3000-${id}\\.localhost:\\d+/__asb_link\\?t=pl_[A-Za-z0-9_-]{43}$`),
    );
    expect(created.err).toMatch(/revoke it with: agent-sandbox preview revoke/);
    const list = await cli(ownerKey, 'preview', 'list', id);
    expect(list.out).toMatch(/^pl-[0-9a-f]{16}\tport 3000\tactive\tuntil /);
    expect(list.out).not.toContain(new URL(url).searchParams.get('t'));
    const linkId = list.out.split('\t')[0]!;
    expect((await cli(ownerKey, 'preview', 'revoke', id, linkId)).out).toBe(`${linkId} revoked\n`);
    expect((await cli(ownerKey, 'preview', 'list', id)).out).toContain('\trevoked\t');
    expect((await cli(ownerKey, 'preview', 'create', id)).err).toMatch(/--port N is required/);
    expect((await cli(ownerKey, 'preview', 'create', id, '--port', '3001')).code).toBe(3);
    await cli(ownerKey, 'members', 'add', id, member);
    expect((await cli(memberKey, 'preview', 'create', id, '--port', '3000')).code).toBe(2);
    expect((await cli(ownerKey, 'preview', '--help')).out).toContain('PREVIEW_LINKS=true');
  });
});
