// Team access: the owner lets other wallets use the sandbox as themselves. `GET …/members` (owner
// and members), `POST …/members {address}` and `DELETE …/members/{address}` (owner only). A
// removal ends what the removed wallet holds open on the sandbox at once (live-access.ts).
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { SandboxRecord } from '../../sandbox/record.ts';
import type { ApiEnv } from '../context.ts';
import type { LiveAccess } from '../live-access.ts';
import { assertOwner } from '../middleware/session.ts';
import {
  errors,
  json,
  jsonBody,
  MemberParamsSchema,
  MemberRequestSchema,
  MembersSchema,
  SANDBOX_ERRORS,
} from '../schemas.ts';
import type { SandboxRouteDeps } from './types.ts';

const sec = [{ bearer: [] }];
const routes = {
  list: createRoute({
    method: 'get',
    path: '/members',
    tags: ['members'],
    summary: "The sandbox's member wallets (its owner and members may read them)",
    security: sec,
    responses: { 200: json(MembersSchema, 'Members'), ...errors(...SANDBOX_ERRORS) },
  }),
  add: createRoute({
    method: 'post',
    path: '/members',
    tags: ['members'],
    summary:
      'Owner only: let a wallet use the sandbox as itself (exec, prompt, terminals, files, ports); idempotent',
    security: sec,
    request: { body: jsonBody(MemberRequestSchema) },
    responses: { 200: json(MembersSchema, 'Members'), ...errors(400, ...SANDBOX_ERRORS, 409) },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/members/{address}',
    tags: ['members'],
    summary: 'Owner only: remove a member; its open streams and connections on the sandbox end at once',
    security: sec,
    request: { params: MemberParamsSchema },
    responses: { 200: json(MembersSchema, 'Members'), ...errors(400, ...SANDBOX_ERRORS) },
  }),
};

const view = (r: SandboxRecord) => ({
  sandbox_id: r.id,
  owner: r.owner.toLowerCase(),
  members: [...(r.members ?? [])],
});

export function registerMembers(app: OpenAPIHono<ApiEnv>, d: SandboxRouteDeps, live: LiveAccess): void {
  app.openapi(routes.list, (c) => c.json(view(c.get('sandbox')), 200));

  app.openapi(routes.add, async (c) => {
    assertOwner(c, 'add members');
    const r = await d.sandboxes.addMember(c.get('sandbox').id, c.req.valid('json').address);
    return c.json(view(r), 200);
  });

  app.openapi(routes.remove, async (c) => {
    assertOwner(c, 'remove members');
    const { address } = c.req.valid('param');
    const r = await d.sandboxes.removeMember(c.get('sandbox').id, address);
    const ended = live.endAddress(r.id, address);
    c.get('log').info({ sandbox_id: r.id, ended }, 'member removed');
    return c.json(view(r), 200);
  });
}
