// Checks a decoded SandboxCreateRequest against this operator's policy (caps, image allow-list,
// JSON fields, lengths) before anything is created, and turns it into runtime create parameters.
import {
  allowListed,
  type CreateSandboxParams,
  parseImageRef,
  parseSshKey,
  RuntimeError,
  resolveShape,
  type ShapeCatalog,
} from '@agent-sandbox/runtime';
import type { JobValue } from '@agent-sandbox/sdk';
import { type CreateOptions, parseCreateOptions } from './create-options.ts';
import { BlueprintError } from './errors.ts';
import type { SANDBOX_CREATE_INPUT } from './jobs.ts';

export type SandboxCreateRequest = JobValue<typeof SANDBOX_CREATE_INPUT>;

/** What this operator accepts; built once from the operator's configuration. */
export interface CreatePolicy {
  /** Image used when the request names none. */
  defaultImage: string;
  /** Images a request may name (the default image is always allowed). */
  imageAllowlist: readonly string[];
  /**
   * Image with the harness CLIs: used when the request names no image and its agent_identifier is
   * one of HARNESS_IDENTIFIERS; always allowed when named.
   */
  harnessImage?: string;
  /** Size presets, the default preset and the ceiling (the runtime's, from its configuration). */
  shapes: ShapeCatalog;
  /** False on an operator without TEE hardware: tee_required requests are refused. */
  teeAvailable: boolean;
  /** False where the operator turned SSH off (SANDBOX_SSH=false): the result says `ssh.enabled: false`. */
  sshOffered?: boolean;
}

/** agent_identifier values that pick the harness image when the request names no image. */
export const HARNESS_IDENTIFIERS: readonly string[] = ['codex', 'claude', 'opencode', 'gemini'];

export const LIMITS = {
  name: 64,
  image: 256,
  stack: 64,
  agentIdentifier: 128,
  attestationNonce: 256,
  sshPublicKey: 8192,
  envJson: 64 * 1024,
  metadataJson: 16 * 1024,
  capabilitiesJson: 4096,
  envKeys: 128,
  ports: 8,
} as const;

/** The runtime's create parameters minus owner/serviceId/callId, plus the public facts to report. */
export type ValidatedCreate = Required<
  Omit<CreateSandboxParams, 'owner' | 'serviceId' | 'callId' | 'expiryExempt' | 'shape' | 'runtime'>
> & {
  /** The OCI runtime named (runc, runsc); the runtime checks it against what the operator offers. */
  runtime: 'runc' | 'runsc' | undefined;
  /** The preset named (the runtime resolves it again, against the same catalog). */
  shape: string | undefined;
  /** The options capabilities_json carried (create-options.ts). */
  options: CreateOptions;
  /** Public, non-secret facts from the request echoed in the result. */
  facts: { stack: string; agentIdentifier: string; sshEnabled: boolean; webTerminalEnabled: boolean };
};

const invalid = (field: string, why: string): BlueprintError =>
  new BlueprintError('INVALID_REQUEST', `${field} ${why}`, { details: { field } });

function checkLength(field: string, value: string, max: number): void {
  if (value.length > max)
    throw invalid(field, `is ${value.length} characters long; at most ${max} are allowed`);
}

/** '' → {}; otherwise a JSON object whose values are all strings. */
export function parseStringMap(field: string, text: string, maxBytes: number): Record<string, string> {
  if (text.trim() === '') return {};
  checkLength(field, text, maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(field, 'is not valid JSON; send a JSON object of string values, e.g. {"KEY":"value"}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(field, 'must be a JSON object of string values, e.g. {"KEY":"value"}');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string')
      throw invalid(field, `has a non-string value at "${k}"; every value must be a string`);
    out[k] = v;
  }
  if (Object.keys(out).length > LIMITS.envKeys) throw invalid(field, `has more than ${LIMITS.envKeys} keys`);
  return out;
}

/**
 * metadata_json: a JSON object of string values, except "ports", an array of container ports
 * (1–65535, at most 8) the sandbox exposes through the operator API's port proxy.
 */
export function parseMetadata(text: string): { metadata: Record<string, string>; ports: number[] } {
  if (text.trim() === '') return { metadata: {}, ports: [] };
  checkLength('metadata_json', text, LIMITS.metadataJson);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('metadata_json', 'is not valid JSON; send a JSON object, e.g. {"ports":[3000]}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('ports' in value)) {
    return { metadata: parseStringMap('metadata_json', text, LIMITS.metadataJson), ports: [] };
  }
  const { ports, ...rest } = value as Record<string, unknown>;
  if (
    !Array.isArray(ports) ||
    ports.length > LIMITS.ports ||
    !ports.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535)
  ) {
    throw invalid(
      'metadata_json',
      `"ports" must be an array of at most ${LIMITS.ports} port numbers 1-65535`,
    );
  }
  return {
    metadata: parseStringMap('metadata_json', JSON.stringify(rest), LIMITS.metadataJson),
    ports: [...new Set(ports as number[])],
  };
}

/**
 * The size a create gets (shapes.ts in the runtime: no size = the default preset clamped to the
 * ceiling; above the ceiling = RESOURCES_EXCEED_LIMIT naming the field and the ceiling), in the
 * blueprint's own error so the refusal's text (ours) is what the chain result carries.
 */
function resources(req: SandboxCreateRequest, shape: string | undefined, policy: CreatePolicy) {
  const n = (v: bigint) => (v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v));
  try {
    return resolveShape(
      { shape, cpuCores: n(req.cpu_cores), memoryMb: n(req.memory_mb), diskGb: n(req.disk_gb) },
      policy.shapes,
    );
  } catch (e) {
    if (!(e instanceof RuntimeError)) throw e;
    const code = e.code === 'RESOURCES_EXCEED_LIMIT' ? 'RESOURCES_EXCEED_LIMIT' : 'INVALID_REQUEST';
    throw new BlueprintError(code, e.shortMessage, { details: e.details, cause: e });
  }
}

/** Timers are clamped by the runtime; a uint64 beyond any sane value is clamped here first. */
const timer = (v: bigint): number =>
  v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);

export function validateCreateRequest(req: SandboxCreateRequest, policy: CreatePolicy): ValidatedCreate {
  checkLength('name', req.name, LIMITS.name);
  checkLength('image', req.image, LIMITS.image);
  checkLength('stack', req.stack, LIMITS.stack);
  checkLength('agent_identifier', req.agent_identifier, LIMITS.agentIdentifier);
  checkLength('attestation_nonce', req.attestation_nonce, LIMITS.attestationNonce);
  checkLength('ssh_public_key', req.ssh_public_key, LIMITS.sshPublicKey);
  if (req.ssh_enabled) {
    if (!req.ssh_public_key) throw invalid('ssh_public_key', 'ssh_enabled needs a public key (a .pub line)');
    try {
      parseSshKey(req.ssh_public_key, 0);
    } catch (e) {
      throw invalid('ssh_public_key', (e as Error).message);
    }
  }
  checkLength('capabilities_json', req.capabilities_json, LIMITS.capabilitiesJson);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(req.name)) throw invalid('name', 'contains control characters');
  const options = parseCreateOptions(req.capabilities_json);
  if (req.tee_type > 3)
    throw invalid('tee_type', `${req.tee_type} is unknown (0 none, 1 TDX, 2 Nitro, 3 SEV)`);
  if (req.tee_required && !policy.teeAvailable) {
    throw new BlueprintError(
      'TEE_UNAVAILABLE',
      'this operator has no TEE backend; send tee_required=false or use a TEE-instance service',
    );
  }
  const plain = options.agent === false;
  const fork = options.from_sandbox !== undefined || options.from_snapshot !== undefined;
  if (fork && req.image.trim() !== '') {
    throw invalid(
      'image',
      `is "${req.image.trim()}", but a copy (from_sandbox / from_snapshot) runs its source's image; leave image empty`,
    );
  }
  if (fork && req.tee_required) {
    throw invalid(
      'tee_required',
      'cannot be set with from_sandbox / from_snapshot: a copy is made on this operator, outside a TEE',
    );
  }
  if (options.startup_script !== undefined) {
    throw invalid(
      'capabilities_json.startup_script',
      plain
        ? 'cannot be used with agent: false: plain compute gets no coding agent, no model credentials and no startup scripts; remove startup_script'
        : 'is not supported by this operator (it runs no startup scripts); run the script with exec after create',
    );
  }
  const wantsHarness = HARNESS_IDENTIFIERS.includes(req.agent_identifier.trim());
  if (plain && wantsHarness) {
    throw invalid(
      'agent_identifier',
      `"${req.agent_identifier.trim()}" names a coding agent, but agent: false is plain compute with none; leave agent_identifier empty or set agent true`,
    );
  }
  const image =
    req.image.trim() !== ''
      ? req.image.trim()
      : wantsHarness && !plain && policy.harnessImage
        ? policy.harnessImage
        : policy.defaultImage;
  if (req.image.trim() !== '' && !parseImageRef(image)) {
    throw invalid(
      'image',
      'is not an image reference: [registry[:port]/]repository[:tag][@sha256:<64 hex>], lowercase repository',
    );
  }
  if (
    image !== policy.defaultImage &&
    image !== policy.harnessImage &&
    !allowListed(image, policy.imageAllowlist)
  ) {
    throw new BlueprintError(
      'IMAGE_NOT_ALLOWED',
      `image "${image}" is not on this operator's allow-list; leave image empty for the default or pick one of: ${[policy.defaultImage, ...(policy.harnessImage ? [policy.harnessImage] : []), ...policy.imageAllowlist].join(', ')} (an entry registry/repo allows any tag or digest of it, registry/prefix/* any repository under it)`,
      { details: { image } },
    );
  }
  // Checked here so a refusal names the field and the ceiling in our words; the runtime gets the
  // request's own numbers (0 = from the preset) and resolves them against the same catalog.
  resources(req, options.shape, policy);
  const n = (v: bigint) => (v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v));
  const [cpuCores, memoryMb, diskGb] = [n(req.cpu_cores), n(req.memory_mb), n(req.disk_gb)];
  const env = parseStringMap('env_json', req.env_json, LIMITS.envJson);
  if (plain && Object.hasOwn(env, 'SANDBOX_AGENT_COMMAND')) {
    throw invalid(
      'env_json',
      'names SANDBOX_AGENT_COMMAND, an agent program, but agent: false is plain compute with none',
    );
  }
  const { metadata, ports } = parseMetadata(req.metadata_json);
  return {
    name: req.name,
    image,
    shape: options.shape,
    runtime: options.runtime,
    cpuCores,
    memoryMb,
    diskGb,
    idleTimeoutSeconds: timer(req.idle_timeout_seconds),
    maxLifetimeSeconds: timer(req.max_lifetime_seconds),
    deleteAfterStoppedSeconds: options.delete_after_stopped_seconds ?? 0,
    agent: !plain,
    // Validated (mode, domain names, no IP literals) by the schema; the runtime enforces it, or
    // refuses it with NETWORK_POLICY_UNAVAILABLE when this operator cannot.
    network: options.network
      ? {
          mode: options.network.mode,
          allowDomains: options.network.allow_domains,
          includeImplicitDomains: options.network.include_implicit_domains,
        }
      : undefined,
    env,
    metadata: {
      ...metadata,
      stack: req.stack,
      agent_identifier: req.agent_identifier,
      ssh_enabled: req.ssh_enabled,
      web_terminal_enabled: req.web_terminal_enabled,
    },
    exposedPorts: ports,
    // SSH on from the start: the key is parsed by the runtime (VALIDATION at create when it is not one).
    sshPublicKey: req.ssh_enabled ? req.ssh_public_key : '',
    fromSandbox: options.from_sandbox ?? '',
    fromSnapshot: options.from_snapshot ?? '',
    options,
    facts: {
      stack: req.stack,
      agentIdentifier: req.agent_identifier,
      sshEnabled: req.ssh_enabled,
      webTerminalEnabled: req.web_terminal_enabled,
    },
  };
}

/** The runtime's create parameters for a validated request (the create job and an instance's provision). */
export function runtimeCreateParams(
  v: ValidatedCreate,
): Omit<CreateSandboxParams, 'owner' | 'serviceId' | 'callId' | 'expiryExempt'> {
  return {
    name: v.name,
    image: v.image,
    ...(v.shape ? { shape: v.shape } : {}),
    ...(v.runtime ? { runtime: v.runtime } : {}),
    cpuCores: v.cpuCores,
    memoryMb: v.memoryMb,
    diskGb: v.diskGb,
    idleTimeoutSeconds: v.idleTimeoutSeconds,
    maxLifetimeSeconds: v.maxLifetimeSeconds,
    deleteAfterStoppedSeconds: v.deleteAfterStoppedSeconds,
    agent: v.agent,
    ...(v.network ? { network: v.network } : {}),
    ...(v.sshPublicKey ? { sshPublicKey: v.sshPublicKey } : {}),
    env: v.env,
    metadata: v.metadata,
    exposedPorts: v.exposedPorts,
    // A fork runs its source's image (the runtime takes it from the source record).
    ...(v.fromSandbox ? { fromSandbox: v.fromSandbox, image: undefined } : {}),
    ...(v.fromSnapshot ? { fromSnapshot: v.fromSnapshot, image: undefined } : {}),
  };
}

/** A sandbox id as the chain allows it: 1..255 bytes (MAX_SANDBOX_ID_LENGTH). */
export function validateSandboxId(id: string): string {
  const bytes = Buffer.byteLength(id, 'utf8');
  if (bytes === 0 || bytes > 255) throw invalid('sandbox_id', `must be 1..255 bytes (got ${bytes})`);
  return id;
}
