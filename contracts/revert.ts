// One decoder for Tangle reverts, used by the CLI, the console and the operator: the real Tangle
// calls a blueprint's reverting hooks (onRegister, onRequest, onJobCall) through _callManager,
// which rethrows any refusal as ManagerReverted(manager, reason). This unwraps the manager's own
// error (UnknownSandbox, NotSandboxOwner, NoOperatorCapacity…) so a user reads its name.
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  type Hex,
  isHex,
  stringify,
} from 'viem';
import { agentSandboxBlueprintAbi } from './abi/AgentSandboxBlueprint.ts';
import { iTangleAbi } from './abi/ITangle.ts';

export interface DecodedRevert {
  /** The refusing contract's error name: the manager's own when Tangle wrapped it. */
  errorName: string;
  args: readonly unknown[];
  /** The manager whose hook refused (ManagerReverted / ManagerRejected), when one did. */
  manager?: Address | undefined;
  /** One line for people: `UnknownSandbox("nope") (refused by the blueprint's manager 0x…)`. */
  text: string;
}

/** This blueprint's errors (the managers are three deployments of one contract). */
export const agentSandboxErrorAbi = agentSandboxBlueprintAbi.filter((i) => i.type === 'error');

const tangleErrorAbi = iTangleAbi.filter((i) => i.type === 'error');

const fmt = (v: unknown): string =>
  typeof v === 'string' && !isHex(v) ? JSON.stringify(v) : typeof v === 'object' ? stringify(v) : String(v);

function decodeWith(data: Hex, abi: Abi): { errorName: string; args: readonly unknown[] } | undefined {
  try {
    const d = decodeErrorResult({ abi, data });
    return { errorName: d.errorName, args: (d.args ?? []) as readonly unknown[] };
  } catch {
    return undefined;
  }
}

/**
 * Decodes revert data from Tangle (or a manager called directly). `managerAbi` holds the
 * manager's errors (default: this blueprint's); an unknown inner error is shown by its selector.
 */
export function decodeRevertData(
  data: Hex,
  managerAbi: Abi = agentSandboxErrorAbi,
): DecodedRevert | undefined {
  const outer = decodeWith(data, [...tangleErrorAbi, ...managerAbi] as Abi);
  if (!outer) {
    if (data.length < 10) return undefined;
    return { errorName: data.slice(0, 10), args: [], text: `an unknown error ${data.slice(0, 10)}` };
  }
  if (outer.errorName === 'ManagerReverted') {
    const [manager, reason] = outer.args as [Address, Hex];
    const by = `(refused by the blueprint's manager ${manager})`;
    const inner = decodeWith(reason, managerAbi) ?? decodeWith(reason, tangleErrorAbi);
    if (!inner) {
      const sel = reason.length >= 10 ? reason.slice(0, 10) : 'no data';
      return {
        errorName: 'ManagerReverted',
        args: outer.args,
        manager,
        text: `an unknown error ${sel} ${by}`,
      };
    }
    const text = `${inner.errorName}${inner.args.length ? `(${inner.args.map(fmt).join(', ')})` : ''} ${by}`;
    return { ...inner, manager, text };
  }
  if (outer.errorName === 'ManagerRejected') {
    const [manager] = outer.args as [Address];
    return {
      ...outer,
      manager,
      text: `ManagerRejected: the blueprint's manager ${manager} failed without a reason (out of Tangle's hook gas, managerHookGasLimit(), or a bare revert)`,
    };
  }
  const text = `${outer.errorName}${outer.args.length ? `(${outer.args.map(fmt).join(', ')})` : ''}`;
  return { ...outer, text };
}

/** The decoded revert inside a viem error; 'no-data' for a bare revert; undefined: not a revert. */
export function describeRevert(e: unknown, managerAbi?: Abi): DecodedRevert | 'no-data' | undefined {
  if (!(e instanceof BaseError)) return undefined;
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (!r) return undefined;
  if (r.raw && r.raw !== '0x') return decodeRevertData(r.raw, managerAbi) ?? 'no-data';
  if (r.data) {
    const args = (r.data.args ?? []) as readonly unknown[];
    const name = r.data.errorName;
    if (name === 'Error' || name === 'Panic')
      return { errorName: name, args, text: `${name}(${args.map(fmt).join(', ')})` };
    return { errorName: name, args, text: `${name}(${args.map(fmt).join(', ')})` };
  }
  if (r.reason) return { errorName: 'Error', args: [r.reason], text: r.reason };
  return 'no-data';
}
