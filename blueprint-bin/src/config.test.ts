import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, configSchema, loadConfig, VARIABLES } from './config.ts';
import { configurationSection, README, withConfigurationSection } from './config-doc.ts';
import { managerConfig } from './operator-options.ts';

const SECRET = 'ab'.repeat(32);
const valid = {
  HTTP_RPC_URL: 'http://127.0.0.1:8545',
  TANGLE_CONTRACT: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  BLUEPRINT_ID: '0',
  SERVICE_ID: '0',
  DATA_DIR: '/tmp/op',
  SESSION_AUTH_SECRET: SECRET,
};

function problemsOf(fn: () => unknown): Array<{ variable: string; problem: string }> {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('accepts a minimal run configuration and fills the documented defaults', () => {
    const c = loadConfig('run', valid);
    expect(c.mode).toBe('cloud');
    expect(c.api).toEqual({ host: '127.0.0.1', port: 9090, publicUrl: 'http://127.0.0.1:9090' });
    expect(c.values.SANDBOX_MAX_CPU_CORES).toBe(2);
    expect(c.values.SANDBOX_IMAGE_ALLOWLIST).toEqual([]);
    expect(c.values.JOB_START_BLOCK).toBe('latest');
    expect(c.env?.serviceId).toBe(0n);
    expect(c.env?.tangleContract).toBe(valid.TANGLE_CONTRACT);
  });

  it('lists every missing required variable in one error', () => {
    const p = problemsOf(() => loadConfig('run', {}));
    const names = p.map((x) => x.variable).sort();
    expect(names).toEqual([
      'BLUEPRINT_ID',
      'DATA_DIR',
      'HTTP_RPC_URL',
      'SERVICE_ID',
      'SESSION_AUTH_SECRET',
      'TANGLE_CONTRACT',
    ]);
    expect(p.every((x) => x.problem === 'is required but not set')).toBe(true);
  });

  it('lists every malformed value in one error, and never echoes a value', () => {
    const bad = {
      ...valid,
      HTTP_RPC_URL: 'ftp://nope',
      TANGLE_CONTRACT: '0x1234',
      SERVICE_ID: '-1',
      SESSION_AUTH_SECRET: 'hunter2-secret-value',
      OPERATOR_API_PORT: '70000',
      OPERATOR_MODE: 'hybrid',
      SANDBOX_MAX_CPU_CORES: 'lots',
      SANDBOX_SNAPSHOT_AUTO_COMMIT: 'maybe',
      SANDBOX_EXTRA_LABELS: 'novalue',
      LOG_LEVEL: 'loud',
      KEYSTORE_PASSWORD: 'pw-should-not-appear',
    };
    let err: ConfigError | undefined;
    try {
      loadConfig('run', bad);
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const names = new Set(err!.problems.map((x) => x.variable));
    for (const v of [
      'HTTP_RPC_URL',
      'TANGLE_CONTRACT',
      'SERVICE_ID',
      'SESSION_AUTH_SECRET',
      'OPERATOR_API_PORT',
      'OPERATOR_MODE',
      'SANDBOX_MAX_CPU_CORES',
      'SANDBOX_SNAPSHOT_AUTO_COMMIT',
      'SANDBOX_EXTRA_LABELS',
      'LOG_LEVEL',
    ]) {
      expect(names.has(v), v).toBe(true);
    }
    // Each variable once, even where the sdk checks it too.
    expect(err!.problems.length).toBe(names.size);
    expect(err!.message).not.toContain('hunter2');
    expect(err!.message).not.toContain('pw-should-not-appear');
    expect(err!.message).toContain('SESSION_AUTH_SECRET');
  });

  it('refuses a wildcard OPERATOR_API_HOST without OPERATOR_PUBLIC_URL (sign-in messages would name it)', () => {
    for (const host of ['0.0.0.0', '::', '[::]']) {
      const p = problemsOf(() => loadConfig('run', { ...valid, OPERATOR_API_HOST: host }));
      expect(p).toHaveLength(1);
      expect(p[0]?.variable).toBe('OPERATOR_PUBLIC_URL');
      expect(p[0]?.problem).toMatch(
        /is required when OPERATOR_API_HOST is a wildcard .*set it to the URL clients use/,
      );
    }
    const ok = loadConfig('run', {
      ...valid,
      OPERATOR_API_HOST: '0.0.0.0',
      OPERATOR_PUBLIC_URL: 'https://op.example.com',
    });
    expect(ok.api).toEqual({ host: '0.0.0.0', port: 9090, publicUrl: 'https://op.example.com' });
    // Commands that serve no sign-in (status reads the API from outside) are not refused.
    expect(() => loadConfig('status', { OPERATOR_API_HOST: '0.0.0.0' })).not.toThrow();
  });

  it('checks defaults against caps', () => {
    const p = problemsOf(() => loadConfig('run', { ...valid, SANDBOX_DEFAULT_MEMORY_MB: '9000' }));
    expect(p).toEqual([
      { variable: 'SANDBOX_DEFAULT_MEMORY_MB', problem: 'must not exceed SANDBOX_MAX_MEMORY_MB' },
    ]);
  });

  it('tee-instance needs TEE_BACKEND, and direct needs TEE_DIRECT_TYPE; unknown values are named', () => {
    const tee = { ...valid, OPERATOR_MODE: 'tee-instance' };
    expect(problemsOf(() => loadConfig('run', tee)).map((p) => p.variable)).toContain('TEE_BACKEND');
    expect(
      problemsOf(() => loadConfig('run', { ...tee, TEE_BACKEND: 'direct' })).map((p) => p.variable),
    ).toEqual(['TEE_DIRECT_TYPE']);
    const bad = problemsOf(() => loadConfig('run', { ...tee, TEE_BACKEND: 'sgx', TEE_DIRECT_TYPE: 'nitro' }));
    expect(bad.map((p) => p.variable).sort()).toEqual(['TEE_BACKEND', 'TEE_DIRECT_TYPE']);
    const ok = loadConfig('run', { ...tee, TEE_BACKEND: 'direct', TEE_DIRECT_TYPE: 'sev' }).values;
    expect(ok.TEE_TSM_REPORT_ROOT).toBe('/sys/kernel/config/tsm/report');
    expect(ok.TEE_ACCEPTED_TCB_STATUSES).toEqual(['UpToDate']);
    expect(ok.SANDBOX_TEE_REQUIRE_PINNED_MEASUREMENT).toBe(true);
  });

  it('parses SANDBOX_EXPOSED_PORTS and refuses bad ports or the sidecar port', () => {
    expect(loadConfig('run', valid).values.SANDBOX_EXPOSED_PORTS).toEqual([]);
    const c = loadConfig('run', { ...valid, SANDBOX_EXPOSED_PORTS: '3000, 5173,3000' });
    expect(c.values.SANDBOX_EXPOSED_PORTS).toEqual([3000, 5173]);
    for (const bad of ['0', '70000', 'http', '1,2,3,4,5,6,7,8,9']) {
      const p = problemsOf(() => loadConfig('run', { ...valid, SANDBOX_EXPOSED_PORTS: bad }));
      expect(
        p.map((x) => x.variable),
        bad,
      ).toEqual(['SANDBOX_EXPOSED_PORTS']);
    }
    expect(problemsOf(() => loadConfig('run', { ...valid, SANDBOX_EXPOSED_PORTS: '8080' }))).toEqual([
      { variable: 'SANDBOX_EXPOSED_PORTS', problem: 'must not include SIDECAR_HTTP_PORT' },
    ]);
    expect(
      problemsOf(() =>
        loadConfig('run', { ...valid, SANDBOX_EGRESS: 'none', SANDBOX_EXPOSED_PORTS: '3000' }),
      ).map((x) => x.variable),
    ).toEqual(['SANDBOX_EXPOSED_PORTS']);
  });

  it('needs only what the command needs', () => {
    expect(() => loadConfig('keys', {})).not.toThrow();
    expect(() => loadConfig('status', {})).not.toThrow();
    const reg = loadConfig('register', { ...valid, SERVICE_ID: undefined, SESSION_AUTH_SECRET: undefined });
    expect(reg.env?.registrationModeOn).toBe(true);
  });

  it('parses lists and labels', () => {
    const c = loadConfig('run', {
      ...valid,
      SANDBOX_IMAGE_ALLOWLIST: ' a:1 , b:2,,',
      SANDBOX_EXTRA_LABELS: 'agent-sandbox.test=1,x=y',
      CORS_ALLOWED_ORIGINS: 'https://a.example',
      OPERATOR_API_PORT: '0',
    });
    expect(c.values.SANDBOX_IMAGE_ALLOWLIST).toEqual(['a:1', 'b:2']);
    expect(c.values.SANDBOX_EXTRA_LABELS).toEqual({ 'agent-sandbox.test': '1', x: 'y' });
    expect(c.values.CORS_ALLOWED_ORIGINS).toEqual(['https://a.example']);
    expect(c.api.publicUrl).toBeUndefined();
  });

  it('maps SNAPSHOT_S3_* into the manager config (none without a bucket), the keys marked secret', () => {
    const opts = { operatorId: 'op', image: 'img', workspaceDisk: 'none' as const };
    expect(managerConfig(loadConfig('run', valid).values, '/tmp/op', opts).snapshotS3).toBeUndefined();
    const c = loadConfig('run', {
      ...valid,
      SNAPSHOT_S3_BUCKET: 'snaps',
      SNAPSHOT_S3_ENDPOINT: 'https://s3.example.net',
      SNAPSHOT_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      SNAPSHOT_S3_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI',
      SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS: 'MinIO.lan, 10.0.0.5',
    });
    expect(managerConfig(c.values, '/tmp/op', opts).snapshotS3).toEqual({
      bucket: 'snaps',
      endpoint: 'https://s3.example.net',
      region: 'us-east-1',
      prefix: 'agent-sandbox/',
      forcePathStyle: true,
      allowHttp: false,
      allowPrivateHosts: ['minio.lan', '10.0.0.5'],
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI',
    });
    expect(VARIABLES.SNAPSHOT_S3_SECRET_ACCESS_KEY.secret).toBe(true);
    expect(VARIABLES.SNAPSHOT_S3_ACCESS_KEY_ID.secret).toBe(true);
  });

  it('has a zod schema over every variable', () => {
    expect(Object.keys(configSchema.shape).sort()).toEqual(Object.keys(VARIABLES).sort());
    expect(configSchema.safeParse({ OPERATOR_API_PORT: '8080' }).success).toBe(true);
  });
});

describe('README configuration table', () => {
  const readme = readFileSync(README, 'utf8');

  it('lists every variable of the schema', () => {
    const section = readme.slice(readme.indexOf('## Configuration'));
    for (const name of Object.keys(VARIABLES)) expect(section, name).toContain(`| \`${name}\` |`);
  });

  it('is exactly the table generated from the schema', () => {
    expect(readme).toContain(configurationSection());
    expect(withConfigurationSection(readme)).toBe(readme);
  });
});
