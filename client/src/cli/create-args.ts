// The `create` command's flags (job 0), kept beside args.ts so the grammar table stays readable.
import type { CommandSpec } from './args.ts';

export const CREATE_COMMAND: CommandSpec = {
  summary: 'create a sandbox (job 0 from the owner account); waits until it is running',
  usage:
    'create [--name N] [--image I] [--shape NAME | --cpu N --memory MB --disk GB] [--env K=V]… [options]',
  positionals: [],
  options: {
    name: { type: 'string', arg: 'NAME', help: 'sandbox name' },
    image: {
      type: 'string',
      arg: 'IMAGE',
      help: 'image to run (operator default when empty): one the operator lists (`/api/capabilities` images), or from a registry on its SANDBOX_IMAGE_ALLOWLIST, e.g. registry.example.com/team/app:1 or …/app@sha256:<digest> to pin it; the operator pulls it (progress under image_pull) and mounts the sidecar into it',
    },
    stack: { type: 'string', arg: 'STACK', help: 'software stack' },
    agent: { type: 'string', arg: 'ID', help: 'agent identifier (harness), e.g. codex, claude' },
    env: {
      type: 'string',
      multiple: true,
      arg: 'K=V',
      help: 'non-secret env (public on chain!); repeatable',
    },
    'env-json': { type: 'string', arg: 'JSON', help: 'non-secret env as a JSON object' },
    'metadata-json': { type: 'string', arg: 'JSON', help: 'metadata JSON object' },
    'ssh-key': {
      type: 'string',
      arg: 'KEY|FILE',
      help: 'enable SSH with this public key (or a .pub file)',
    },
    'no-web-terminal': { type: 'boolean', help: 'disable the web terminal' },
    lifetime: { type: 'string', arg: 'SECONDS', help: 'max lifetime (default 3600)' },
    'idle-timeout': { type: 'string', arg: 'SECONDS', help: 'idle timeout (default 900)' },
    shape: {
      type: 'string',
      arg: 'NAME',
      help: "a size preset of the operator's (`agent-sandbox shapes`); --cpu/--memory/--disk override its fields",
    },
    cpu: { type: 'string', arg: 'N', help: "CPU cores (default: the operator's default preset)" },
    memory: { type: 'string', arg: 'MB', help: "memory in MB (default: the operator's default preset)" },
    disk: { type: 'string', arg: 'GB', help: "disk in GB (default: the operator's default preset)" },
    'delete-after-stopped': {
      type: 'string',
      arg: 'SECONDS',
      help: "delete the sandbox after it has been stopped this long; a resume restarts the clock (default: the operator's, 30 days)",
    },
    'no-agent': {
      type: 'boolean',
      help: 'plain compute: no coding agent, no model credentials, no startup scripts (agent: false)',
    },
    runtime: {
      type: 'string',
      arg: 'runc|runsc',
      help: "OCI runtime: runsc = gVisor, a user-space kernel between your code and the host (where the operator offers it: `runtimes` in its /api/capabilities; default: the operator's)",
    },
    'from-sandbox': {
      type: 'string',
      arg: 'ID',
      help: 'branch: start with a copy of the workspace of this sandbox of yours (no secrets are copied)',
    },
    'from-snapshot': {
      type: 'string',
      arg: 'SNAPSHOT_ID',
      help: 'start with the workspace of this snapshot of yours (the id `agent-sandbox snapshot` printed)',
    },
    network: {
      type: 'string',
      arg: 'default|strict',
      help: "the sandbox's own network policy: default = the operator's implicit domains (package registries, git hosts, container registries, CDNs; `agent-sandbox capabilities` lists them) plus any --allow-domain; strict = only the --allow-domain names. Never wider than the operator's SANDBOX_EGRESS; without it the sandbox reaches what SANDBOX_EGRESS allows",
    },
    'allow-domain': {
      type: 'string',
      multiple: true,
      arg: 'DOMAIN',
      help: 'a domain the policy reaches (example.com includes its subdomains, *.example.com only them; no IP addresses); repeatable; implies --network strict when --network is not given',
    },
    'include-implicit-domains': {
      type: 'boolean',
      help: "with --network strict: the operator's implicit domains too",
    },
    tee: { type: 'string', arg: 'TYPE', help: 'require a TEE: tdx, nitro or sev' },
    'attestation-nonce': { type: 'string', arg: 'NONCE', help: 'nonce to bind into the TEE attestation' },
    'capabilities-json': {
      type: 'string',
      arg: 'JSON',
      help: 'create options as one JSON object (what --shape, --delete-after-stopped … fill in)',
    },
    timeout: { type: 'string', arg: 'SECONDS', help: 'give up waiting after this long (default 600)' },
    'keep-unready': {
      type: 'boolean',
      help: 'keep a sandbox that never reports running (default: delete it with job 1)',
    },
  },
  details:
    'Job inputs are public on chain: put credentials in `agent-sandbox secrets set` after create. Env names that look like secrets are refused. With --from-sandbox / --from-snapshot the new sandbox starts with a copy of that workspace (your own only; no secrets, env or token copied; it runs the source’s image). Progress (queued → image_pull [→ workspace_copy] → container_create → container_start → health_check → ready, or queued → pool_claim → ready when the operator has a warm container) is printed as it happens; the command returns only when the operator reports the sandbox running, or fails naming the phase. A network policy is enforced by the operator outside the sandbox: DNS answers only the allowed names, and only the addresses they resolved to can be reached (IP literals fail); `agent-sandbox get` shows it.',
  examples: [
    'agent-sandbox create --devnet .devnet/devnet.json --operator http://127.0.0.1:9090 --name demo',
    'agent-sandbox create --from-snapshot sha256:3f2a… --name from-snap',
    'agent-sandbox create --network strict --allow-domain github.com --allow-domain registry.npmjs.org',
  ],
};

const { image: _image, 'from-sandbox': _from, ...BRANCH_OPTIONS } = CREATE_COMMAND.options;

/** `branch <id>`: `create --from-sandbox <id>` (job 0): a new sandbox with a copy of the workspace. */
export const BRANCH_COMMAND: CommandSpec = {
  summary: 'copy a sandbox of yours into a new one (job 0 with from_sandbox); waits until it is running',
  usage: 'branch <id> [--name N] [--shape NAME] [create options]',
  positionals: [{ name: 'id', required: true }],
  options: BRANCH_OPTIONS,
  details:
    "The new sandbox has its own id and sidecar token, runs the source's image and starts with a copy of the source's workspace (/home/agent) as it is now; the source keeps running untouched. Nothing secret is copied: no secrets, no create env, no token — set the secrets again with `agent-sandbox secrets set`. Only your own sandboxes can be branched (another owner's id is refused with SOURCE_NOT_FOUND). Progress: queued → image_pull → workspace_copy → container_create → container_start → health_check → ready.",
  examples: ['agent-sandbox branch sbx-0123… --name experiment'],
};
