// The grammar of `agent-sandbox ssh add|remove|list|connect` (SSH into a sandbox). Merged into
// COMMANDS by args.ts.
import type { CommandSpec } from './args.ts';

export const SSH_COMMANDS: Record<string, CommandSpec> = {
  ssh: {
    summary:
      'SSH into your sandbox: let a public key in, revoke it, list keys, or tunnel (add | remove | list | connect)',
    usage:
      'ssh add <id> <key.pub|"ssh-ed25519 AAAA…"> | ssh remove <id> <fingerprint|key.pub> | ssh list <id> | ssh connect <id>',
    positionals: [
      { name: 'action', required: true },
      { name: 'id', required: true },
      { name: 'key', required: false },
    ],
    options: {},
    details:
      "SSH is off until the owner adds a key (or creates the sandbox with --ssh-key). The connection goes through the operator API as a WebSocket, signed in with your wallet session, so no port is opened anywhere: `connect` is the ProxyCommand that carries it, and sshd inside the sandbox then checks your key. You log in as `agent` (the sandbox user; no root, no password, no port/agent/X11 forwarding); scp and sftp work. Keys survive stop/resume. `remove` ends the sandbox's open SSH sessions. The sandbox must be running. Not offered in TEE mode or when the operator sets SANDBOX_SSH=false.",
    examples: [
      'agent-sandbox ssh add sbx-… ~/.ssh/id_ed25519.pub',
      'ssh -o ProxyCommand="agent-sandbox ssh connect %h" agent@sbx-…',
      'scp -o ProxyCommand="agent-sandbox ssh connect %h" notes.txt agent@sbx-…:workspace/',
      'agent-sandbox ssh remove sbx-… SHA256:…',
    ],
  },
};
