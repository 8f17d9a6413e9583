// What every CLI command needs, resolved once from flags, env and the devnet file: the operator
// URL, the owner's key (only when a command needs it), the session cache, and the chain handle.
import type { LocalAccount } from 'viem';
// viem, the chain (contracts, ABIs), keys, the devnet file and instance look-ups load only when a
// command needs them: an operator-API command on a cached session (exec, get, …) starts without.
import type { SandboxChain } from '../chain.ts';
import type { Devnet } from '../devnet.ts';
import { ClientError } from '../errors.ts';
import { OperatorClient } from '../operator-client.ts';
import { configDir, normalizeOperatorUrl, SessionCache } from '../session-cache.ts';
import type { ParsedArgs } from './args.ts';
import { terminalSafe } from './tty-safe.ts';

/** viem's isAddress (not strict about the checksum), loaded when first needed. */
async function isAddress(v: string): Promise<boolean> {
  return (await import('viem')).isAddress(v, { strict: false });
}

export interface CliIO {
  stdout: { write(s: string): unknown; isTTY?: boolean; columns?: number; rows?: number };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  env: NodeJS.ProcessEnv;
  /** Asks for a secret without echo (TTY only); undefined when there is no terminal to ask on. */
  readSecret?: (prompt: string) => Promise<string>;
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
  /** Test hook: the fetch the SDK uses. */
  fetch?: typeof fetch;
}

export class CliContext {
  readonly args: ParsedArgs;
  readonly io: CliIO;
  readonly json: boolean;
  readonly cache: SessionCache;
  private devnetPromise: Promise<Devnet | undefined> | undefined;
  private accountPromise: Promise<LocalAccount | undefined> | undefined;

  constructor(args: ParsedArgs, io: CliIO) {
    this.args = args;
    // Sandbox-controlled text reaches stdout and stderr (answers, command output, remote error
    // messages): escaped on a terminal unless --raw; `terminal` is a terminal, raw like ssh.
    const raw = args.globals.raw === true || args.command === 'terminal';
    this.io = raw ? io : { ...io, stdout: terminalSafe(io.stdout), stderr: terminalSafe(io.stderr) };
    this.json = args.globals.json === true;
    this.cache = new SessionCache(configDir(io.env));
  }

  private flag(name: string, envName?: string): string | undefined {
    const v = this.args.globals[name];
    if (typeof v === 'string' && v !== '') return v;
    const e = envName ? this.io.env[envName] : undefined;
    return e === '' ? undefined : e;
  }

  devnet(): Promise<Devnet | undefined> {
    this.devnetPromise ??= (async () => {
      const path = this.flag('devnet', 'AGENT_SANDBOX_DEVNET');
      return path ? (await import('../devnet.ts')).loadDevnet(path) : undefined;
    })();
    return this.devnetPromise;
  }

  /** The owner key from --private-key / env / --keystore / the devnet; undefined when none given. */
  account(): Promise<LocalAccount | undefined> {
    this.accountPromise ??= (async () => {
      const pk = this.flag('private-key', 'AGENT_SANDBOX_PRIVATE_KEY');
      if (pk) return (await import('../keys.ts')).accountFromPrivateKey(pk);
      const keystore = this.flag('keystore', 'AGENT_SANDBOX_KEYSTORE');
      if (keystore) {
        let password = this.io.env.AGENT_SANDBOX_KEYSTORE_PASSWORD;
        if (password === undefined) {
          if (!this.io.readSecret) {
            throw new ClientError(
              'USAGE',
              'the keystore needs a password: set AGENT_SANDBOX_KEYSTORE_PASSWORD or run in a terminal',
            );
          }
          password = await this.io.readSecret(`Password for ${keystore}: `);
        }
        return (await import('../keys.ts')).accountFromKeystore(keystore, password);
      }
      const devnet = await this.devnet();
      if (devnet) {
        const name = this.flag('account') ?? 'user';
        const acct = devnet.accounts[name];
        if (!acct) {
          throw new ClientError(
            'USAGE',
            `devnet has no account "${name}"; it has: ${Object.keys(devnet.accounts).join(', ') || 'none'}`,
          );
        }
        return (await import('../keys.ts')).accountFromPrivateKey(acct.privateKey);
      }
      return undefined;
    })();
    return this.accountPromise;
  }

  async requireAccount(what: string): Promise<LocalAccount> {
    const a = await this.account();
    if (!a) {
      throw new ClientError(
        'USAGE',
        `${what} needs the owner key: pass --keystore FILE, --private-key HEX or --devnet FILE`,
      );
    }
    return a;
  }

  /**
   * --operator / env / the operator remembered for this sandbox / the devnet's / the chain's
   * answer (the blueprint's getSandboxOperator, then that operator's registered rpcAddress).
   */
  async operatorUrl(sandboxId?: string): Promise<string> {
    const explicit = this.flag('operator', 'AGENT_SANDBOX_OPERATOR');
    if (explicit) return normalizeOperatorUrl(explicit);
    if (sandboxId) {
      const remembered = await this.cache.operatorFor(sandboxId);
      if (remembered) return remembered;
    }
    const devnet = await this.devnet();
    if (devnet?.operatorUrls[0]) return normalizeOperatorUrl(devnet.operatorUrls[0]);
    const blueprint = this.flag('blueprint', 'AGENT_SANDBOX_BLUEPRINT') ?? devnet?.blueprint;
    const chain = sandboxId && blueprint ? await this.chainIfConfigured() : undefined;
    if (chain && sandboxId && blueprint && (await isAddress(blueprint))) {
      const operator = await chain.sandboxOperator(blueprint as `0x${string}`, sandboxId);
      if (!operator) throw new ClientError('NOT_FOUND', `sandbox ${sandboxId} is not active on chain`);
      const url = await chain.operatorRpcAddress(operator);
      if (url && /^https?:\/\//.test(url)) return normalizeOperatorUrl(url);
    }
    throw new ClientError('USAGE', 'which operator? pass --operator URL or set AGENT_SANDBOX_OPERATOR');
  }

  /** Every operator to ask for `list`: --operator, else the service's operators on chain. */
  async operatorUrls(): Promise<string[]> {
    const explicit = this.flag('operator', 'AGENT_SANDBOX_OPERATOR');
    if (explicit) return [normalizeOperatorUrl(explicit)];
    const devnet = await this.devnet();
    if (devnet?.operatorUrls.length) return devnet.operatorUrls.map(normalizeOperatorUrl);
    const chain = await this.chainIfConfigured();
    if (chain) {
      const urls: string[] = [];
      for (const op of await chain.serviceOperators()) {
        const url = await chain.operatorRpcAddress(op);
        if (url && /^https?:\/\//.test(url)) urls.push(normalizeOperatorUrl(url));
      }
      if (urls.length) return [...new Set(urls)];
    }
    throw new ClientError(
      'USAGE',
      'which operator? pass --operator URL, or --devnet/--rpc… to ask every operator',
    );
  }

  /** The service id given with --instance (or env AGENT_SANDBOX_INSTANCE), if any. */
  instanceService(): bigint | undefined {
    const v = this.args.globals.instance;
    return typeof v === 'string' ? BigInt(v) : undefined;
  }

  /**
   * The operator serving the instance sandbox of the --instance service: --operator, else the
   * first URL the blueprint's getOperatorEndpoints lists (rpc and blueprint from flags, env or
   * the devnet file's instance contract).
   */
  async instanceOperatorUrl(serviceId: bigint): Promise<string> {
    const explicit = this.flag('operator', 'AGENT_SANDBOX_OPERATOR');
    if (explicit) return normalizeOperatorUrl(explicit);
    const { rpcUrl, blueprint } = await this.instanceContract();
    const { instanceEndpoints } = await import('../instance.ts');
    const [first] = await instanceEndpoints(rpcUrl, blueprint, serviceId);
    if (!first) {
      throw new ClientError(
        'NOT_FOUND',
        `no operator has reported the instance of service ${serviceId} on ${blueprint} yet; check its status with \`agent-sandbox-operator status\`, or pass --operator URL`,
      );
    }
    return normalizeOperatorUrl(first.url);
  }

  /** The chain and instance contract of --instance: --rpc/--blueprint, env, or the devnet file. */
  private async instanceContract(): Promise<{ rpcUrl: string; blueprint: `0x${string}` }> {
    const devnet = await this.devnet();
    const rpcUrl = this.flag('rpc', 'AGENT_SANDBOX_RPC') ?? devnet?.rpcUrl;
    const devnetInstance = (devnet?.raw.contracts as Record<string, unknown> | undefined)?.instance;
    const blueprint =
      this.flag('blueprint', 'AGENT_SANDBOX_BLUEPRINT') ??
      (typeof this.args.options.blueprint === 'string' ? this.args.options.blueprint : undefined) ??
      (typeof devnetInstance === 'string' ? devnetInstance : undefined);
    if (!rpcUrl || !blueprint) {
      throw new ClientError(
        'USAGE',
        '--instance needs the chain to find its operator: pass --rpc URL and --blueprint ADDR (the instance contract), or --devnet FILE, or --operator URL',
      );
    }
    if (!(await isAddress(blueprint)))
      throw new ClientError('USAGE', `--blueprint "${blueprint}" is not an address`);
    return { rpcUrl, blueprint: blueprint as `0x${string}` };
  }

  /**
   * The chain handle for jobs of the --instance service (workflows): its service id, and Tangle
   * from --tangle, env, or the instance contract's own `tangleCore` (no devnet file needed).
   */
  async instanceChain(serviceId: bigint): Promise<SandboxChain> {
    const { rpcUrl, blueprint } = await this.instanceContract();
    const { instanceTangle } = await import('../instance.ts');
    const tangle = this.flag('tangle', 'AGENT_SANDBOX_TANGLE') ?? (await instanceTangle(rpcUrl, blueprint));
    if (!(await isAddress(tangle))) throw new ClientError('USAGE', `--tangle "${tangle}" is not an address`);
    const account = await this.account();
    const { SandboxChain } = await import('../chain.ts');
    return new SandboxChain({
      rpcUrl,
      tangle: tangle as `0x${string}`,
      serviceId,
      ...(account ? { account } : {}),
    });
  }

  /** An OperatorClient with the cached session (if any) and the key (if any) to renew it. */
  async operator(sandboxId?: string): Promise<OperatorClient> {
    const instance = this.instanceService();
    if (instance !== undefined) return this.operatorAt(await this.instanceOperatorUrl(instance), 'instance');
    return this.operatorAt(await this.operatorUrl(sandboxId));
  }

  /** A client for the operator's public routes (no key or session needed). */
  async publicOperator(): Promise<OperatorClient> {
    const baseUrl = await this.operatorUrl();
    return new OperatorClient({ baseUrl, ...(this.io.fetch ? { fetch: this.io.fetch } : {}) });
  }

  async operatorAt(baseUrl: string, mode: 'cloud' | 'instance' = 'cloud'): Promise<OperatorClient> {
    const account = await this.account();
    const cached = await this.cache.get(baseUrl, account?.address);
    if (!account && !cached) {
      throw new ClientError(
        'UNAUTHORIZED',
        `not signed in to ${baseUrl}; run \`agent-sandbox login --operator ${baseUrl}\` with your key`,
      );
    }
    return new OperatorClient({
      baseUrl,
      mode,
      ...(account ? { account } : {}),
      ...(cached
        ? { token: cached.token, ...(cached.expiresAt ? { tokenExpiresAt: cached.expiresAt } : {}) }
        : {}),
      onSession: (s) =>
        this.cache.put({ operator: baseUrl, address: s.address, token: s.token, expiresAt: s.expiresAt }),
      // A sign-in message for another chain is refused, when the CLI knows which chain it is on.
      chainId: () => this.knownChainId(),
      ...(this.io.fetch ? { fetch: this.io.fetch } : {}),
    });
  }

  /** The chain the user works on: the devnet's, else the --rpc node's eth_chainId; undefined if neither is given. */
  async knownChainId(): Promise<number | undefined> {
    const devnet = await this.devnet();
    if (devnet) return devnet.chainId;
    const rpc = this.flag('rpc', 'AGENT_SANDBOX_RPC');
    if (!rpc) return undefined;
    try {
      const res = await (this.io.fetch ?? fetch)(rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: AbortSignal.timeout(10_000),
      });
      const id = ((await res.json()) as { result?: unknown }).result;
      if (typeof id === 'string' && /^0x[0-9a-f]+$/i.test(id)) return Number(BigInt(id));
      throw new Error(`eth_chainId answered ${JSON.stringify(id)}`);
    } catch (e) {
      throw new ClientError(
        'REMOTE',
        `cannot read the chain id from --rpc ${rpc} to check the operator's sign-in message (${(e as Error).message}); check the RPC URL, or leave --rpc out for operator commands`,
        { cause: e },
      );
    }
  }

  /** The chain handle when rpc/tangle/service are all known, else undefined (no error). */
  async chainIfConfigured(): Promise<SandboxChain | undefined> {
    const devnet = await this.devnet();
    const known =
      (this.flag('rpc', 'AGENT_SANDBOX_RPC') ?? devnet?.rpcUrl) &&
      (this.flag('tangle', 'AGENT_SANDBOX_TANGLE') ?? devnet?.tangle) &&
      (this.flag('service', 'AGENT_SANDBOX_SERVICE') ?? devnet?.serviceId) !== undefined;
    return known ? this.chain() : undefined;
  }

  /** The chain handle for jobs: --rpc/--tangle/--service, env, or the devnet file. */
  async chain(): Promise<SandboxChain> {
    const devnet = await this.devnet();
    const rpcUrl = this.flag('rpc', 'AGENT_SANDBOX_RPC') ?? devnet?.rpcUrl;
    const tangle = this.flag('tangle', 'AGENT_SANDBOX_TANGLE') ?? devnet?.tangle;
    const serviceText = this.flag('service', 'AGENT_SANDBOX_SERVICE');
    const missing = [
      !rpcUrl && '--rpc',
      !tangle && '--tangle',
      serviceText === undefined && devnet?.serviceId === undefined && '--service',
    ]
      .filter(Boolean)
      .join(', ');
    if (missing) throw new ClientError('USAGE', `on-chain jobs need ${missing} (or --devnet FILE)`);
    if (!(await isAddress(tangle!))) throw new ClientError('USAGE', `--tangle "${tangle}" is not an address`);
    if (serviceText !== undefined && !/^\d+$/.test(serviceText)) {
      throw new ClientError('USAGE', `--service must be a non-negative integer, got "${serviceText}"`);
    }
    const account = await this.account();
    const { SandboxChain } = await import('../chain.ts');
    return new SandboxChain({
      rpcUrl: rpcUrl!,
      tangle: tangle as `0x${string}`,
      serviceId: serviceText !== undefined ? BigInt(serviceText) : devnet!.serviceId!,
      ...(account ? { account } : {}),
    });
  }

  out(line: string): void {
    this.io.stdout.write(`${line}\n`);
  }

  /** Progress and notes go to stderr, so stdout stays clean for data (and for --json). */
  note(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  printJson(value: unknown): void {
    this.io.stdout.write(
      `${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`,
    );
  }
}
