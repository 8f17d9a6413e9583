// The grammar of the sharing commands: `members add|remove|list` (team access) and `preview
// create|list|revoke` (shareable preview links). Merged into COMMANDS by args.ts.
import type { CommandSpec } from './args.ts';

const action = { name: 'action', required: true };
const id = { name: 'id', required: true };

export const SHARING_COMMANDS: Record<string, CommandSpec> = {
  members: {
    summary: 'team access: let other wallets use your sandbox (add | remove | list)',
    usage: 'members add <id> <address> | members remove <id> <address> | members list <id>',
    positionals: [action, id, { name: 'address', required: false }],
    options: {},
    details:
      "A member signs in with its own wallet (`agent-sandbox login`) and may exec, prompt, open terminals, read and write files and reach the sandbox's ports. Only the owner adds or removes members, sets or reads secrets, creates preview links and deletes the sandbox. Removing a member ends its open terminals and streams at once. Members see the sandbox with `list --scope team`.",
    examples: [
      'agent-sandbox members add sbx-… 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4',
      'agent-sandbox members remove sbx-… 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4',
    ],
  },
  preview: {
    summary: 'shareable preview links to one port of your sandbox (create | list | revoke)',
    usage:
      'preview create <id> --port N [--expires SECONDS] | preview list <id> | preview revoke <id> <link-id>',
    positionals: [action, id, { name: 'link-id', required: false }],
    options: {
      port: { type: 'string', arg: 'N', help: 'create: the exposed container port the link reaches' },
      expires: {
        type: 'string',
        arg: 'SECONDS',
        help: "create: how long the link works (default and ceiling: the operator's)",
      },
    },
    details:
      "Anyone with the link's URL reaches that one port of the sandbox (nothing else of it, and not the operator API) until it expires or you revoke it; revoking also ends connections open through it. The URL is printed once: it is not stored in readable form. Off unless the operator enables them (PREVIEW_LINKS=true); each link is rate-limited.",
    examples: [
      'agent-sandbox preview create sbx-… --port 3000 --expires 3600',
      'agent-sandbox preview revoke sbx-… pl-0123456789abcdef',
    ],
  },
};
