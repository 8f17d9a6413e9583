// The operator's ONE configuration module: every environment variable in one zod-validated table,
// read once, with every problem listed in one error; the README's configuration table is
// generated from the same table (configMarkdown), and a test keeps the two equal.
import { type BlueprintEnvironment, isSdkError, loadEnvironment } from '@agent-sandbox/sdk';
import { z } from 'zod';
import { ConfigError } from './config-error.ts';
import { type Command, VARIABLES, type Var, type VariableName } from './config-vars.ts';

export { ConfigError } from './config-error.ts';
export { type Command, VARIABLES, type VariableName } from './config-vars.ts';

type Values = { [K in VariableName]: z.output<(typeof VARIABLES)[K]['schema']> | undefined };

/** The schema of every variable, for tools and tests: `z.object({ NAME: schema.optional(), … })`. */
export const configSchema = z.object(
  Object.fromEntries(Object.entries(VARIABLES).map(([k, s]) => [k, s.schema.optional()])) as {
    [K in VariableName]: z.ZodOptional<(typeof VARIABLES)[K]['schema']>;
  },
);

export interface OperatorConfig {
  command: Command;
  values: Values;
  /** The sdk's view of the same variables (undefined for commands that need no chain). */
  env: BlueprintEnvironment | undefined;
  mode: 'cloud' | 'instance' | 'tee-instance';
  dataDir: string | undefined;
  api: { host: string; port: number; publicUrl: string | undefined };
  logLevel: string;
  pretty: boolean;
}

type EnvSource = Record<string, string | undefined>;

/**
 * Reads and validates every variable for `command` at once. Throws ONE ConfigError listing every
 * missing or malformed variable (names and reasons only: values are never echoed).
 */
export function loadConfig(command: Command, source: EnvSource = process.env): OperatorConfig {
  const problems: Array<{ variable: string; problem: string }> = [];
  const values = {} as Record<string, unknown>;
  for (const [name, spec] of Object.entries(VARIABLES) as Array<[VariableName, Var]>) {
    const raw = source[name];
    const set = raw !== undefined && raw.trim() !== '';
    if (!set && spec.requiredFor?.includes(command)) {
      problems.push({ variable: name, problem: 'is required but not set' });
      continue;
    }
    const input = set ? raw : spec.def;
    if (input === undefined) continue;
    const r = spec.schema.safeParse(input);
    if (r.success) values[name] = r.data;
    else problems.push({ variable: name, problem: r.error.issues.map((i) => i.message).join('; ') });
  }
  // Cross-field rules.
  const n = values as Partial<Values>;
  const pairs: Array<[VariableName, VariableName]> = [
    ['SANDBOX_DEFAULT_CPU_CORES', 'SANDBOX_MAX_CPU_CORES'],
    ['SANDBOX_DEFAULT_MEMORY_MB', 'SANDBOX_MAX_MEMORY_MB'],
    ['SANDBOX_DEFAULT_DISK_GB', 'SANDBOX_MAX_DISK_GB'],
    ['SANDBOX_DEFAULT_IDLE_TIMEOUT', 'SANDBOX_MAX_IDLE_TIMEOUT'],
    ['SANDBOX_DEFAULT_MAX_LIFETIME', 'SANDBOX_MAX_MAX_LIFETIME'],
  ];
  for (const [d, m] of pairs) {
    const dv = n[d] as number | undefined;
    const mv = n[m] as number | undefined;
    if (dv !== undefined && mv !== undefined && dv > mv)
      problems.push({ variable: d, problem: `must not exceed ${m}` });
  }
  if (n.SANDBOX_EXPOSED_PORTS?.includes(n.SIDECAR_HTTP_PORT as number)) {
    problems.push({ variable: 'SANDBOX_EXPOSED_PORTS', problem: 'must not include SIDECAR_HTTP_PORT' });
  }
  if (n.SANDBOX_EGRESS === 'none' && (n.SANDBOX_EXPOSED_PORTS as number[] | undefined)?.length) {
    problems.push({
      variable: 'SANDBOX_EXPOSED_PORTS',
      problem: 'must be empty under SANDBOX_EGRESS=none (sandboxes have no network to expose a port on)',
    });
  }
  const offered = [n.SANDBOX_RUNTIME, ...((n.SANDBOX_RUNTIMES_ALLOWED as string[] | undefined) ?? [])];
  if (n.SANDBOX_EGRESS === 'none' && offered.includes('runsc')) {
    problems.push({
      variable: n.SANDBOX_RUNTIME === 'runsc' ? 'SANDBOX_RUNTIME' : 'SANDBOX_RUNTIMES_ALLOWED',
      problem:
        "must not offer runsc under SANDBOX_EGRESS=none (gVisor cannot give the sidecar's Unix socket its 0600 mode); use runc or egress public",
    });
  }
  if (n.REGISTRATION_CAPTURE_ONLY && !n.REGISTRATION_OUTPUT_PATH) {
    problems.push({
      variable: 'REGISTRATION_OUTPUT_PATH',
      problem: 'is required when REGISTRATION_CAPTURE_ONLY is on',
    });
  }
  const flagged = (name: string) => problems.some((p) => p.variable === name);
  // Sign-in messages name the public URL's host, and clients refuse a message naming another: a
  // wildcard bind address is no address a client can check, so the public URL must be given.
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(String(n.OPERATOR_API_HOST));
  if (command === 'run' && wildcard && !n.OPERATOR_PUBLIC_URL && !flagged('OPERATOR_PUBLIC_URL')) {
    problems.push({
      variable: 'OPERATOR_PUBLIC_URL',
      problem: `is required when OPERATOR_API_HOST is a wildcard address (0.0.0.0, ::): sign-in messages would name that address and clients refuse them; set it to the URL clients use, e.g. https://operator.example.com`,
    });
  }
  if (n.OPERATOR_MODE === 'tee-instance' && !n.TEE_BACKEND && !flagged('TEE_BACKEND')) {
    problems.push({ variable: 'TEE_BACKEND', problem: 'is required in tee-instance mode (direct or phala)' });
  }
  if (n.TEE_BACKEND === 'phala') {
    for (const name of ['PHALA_API_KEY', 'PHALA_SANDBOX_IMAGE'] as const) {
      if (!n[name] && !flagged(name))
        problems.push({ variable: name, problem: 'is required with TEE_BACKEND=phala' });
    }
  }
  if (n.TEE_BACKEND === 'direct' && !n.TEE_DIRECT_TYPE && !flagged('TEE_DIRECT_TYPE')) {
    problems.push({
      variable: 'TEE_DIRECT_TYPE',
      problem: 'is required with TEE_BACKEND=direct (tdx or sev)',
    });
  }
  // The sdk reads its own variables by its own rules; its problems join the same list.
  let env: BlueprintEnvironment | undefined;
  if (command === 'run' || command === 'register') {
    try {
      env = loadEnvironment({
        ...source,
        ...(command === 'register' ? { REGISTRATION_MODE_ON: 'true' } : {}),
      });
    } catch (e) {
      if (!isSdkError(e, 'CONFIG')) throw e;
      const seen = new Set(problems.map((p) => p.variable));
      for (const p of (e.details?.['problems'] ?? []) as Array<{ variable: string; problem: string }>) {
        if (!seen.has(p.variable)) problems.push(p);
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const host = n.OPERATOR_API_HOST as string;
  const port = n.OPERATOR_API_PORT as number;
  return {
    command,
    values: values as Values,
    env,
    mode: n.OPERATOR_MODE as OperatorConfig['mode'],
    dataDir: n.DATA_DIR as string | undefined,
    api: {
      host,
      port,
      publicUrl:
        (n.OPERATOR_PUBLIC_URL as string | undefined) ?? (port === 0 ? undefined : `http://${host}:${port}`),
    },
    logLevel: n.LOG_LEVEL as string,
    pretty: n.LOG_PRETTY as boolean,
  };
}

/** The README's configuration table, generated from VARIABLES. */
export function configMarkdown(): string {
  const rows = (Object.entries(VARIABLES) as Array<[VariableName, Var]>).map(([name, s]) => {
    const def = s.requiredFor
      ? `**required** (${s.requiredFor.join(', ')})`
      : s.def !== undefined
        ? s.def === ''
          ? '(empty)'
          : `\`${s.def}\``
        : (s.defaultDoc ?? '(none)');
    return `| \`${name}\` | ${s.group} | ${def} | ${s.doc.replace(/\|/g, '\\|')}${s.secret ? ' (secret: never logged)' : ''} |`;
  });
  return ['| Variable | Group | Default | Purpose |', '|---|---|---|---|', ...rows].join('\n');
}
