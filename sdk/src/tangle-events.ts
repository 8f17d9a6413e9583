// JobSubmitted logs from Tangle: fetch them with eth_getLogs and decode both on-chain layouts.
import { iTangleAbi } from '@agent-sandbox/contracts';
import {
  type AbiEvent,
  type Address,
  decodeEventLog,
  getAbiItem,
  type Hex,
  numberToHex,
  type PublicClient,
  pad,
  toEventSelector,
} from 'viem';
import type { LogPosition } from './job-cursor.ts';

const jobSubmitted = getAbiItem({ abi: iTangleAbi, name: 'JobSubmitted' }) as AbiEvent;
const withJobIndexIndexed = (indexed: boolean): AbiEvent => ({
  ...jobSubmitted,
  inputs: jobSubmitted.inputs.map((i) => (i.name === 'jobIndex' ? { ...i, indexed } : i)),
});
// Derived from the generated ABI, not written by hand: the real contract emits jobIndex in the data
// (3 topics) while the published interface marks it indexed (4 topics); same topic0 either way.
const layout3Topics = withJobIndexIndexed(false);
const layout4Topics = withJobIndexIndexed(true);

export const JOB_SUBMITTED_TOPIC: Hex = toEventSelector(jobSubmitted);

/** One decoded JobSubmitted event with its position on chain. */
export interface JobSubmittedEvent {
  serviceId: bigint;
  callId: bigint;
  jobIndex: number;
  caller: Address;
  inputs: Hex;
  blockNumber: bigint;
  logIndex: number;
  blockHash: Hex;
  transactionHash: Hex;
  /** Client-side clock when the log was fetched (ms since epoch), for latency measurements. */
  seenAt: number;
}

export const positionOf = (e: { blockNumber: bigint; logIndex: number }): LogPosition => ({
  block: e.blockNumber,
  logIndex: e.logIndex,
});

interface RpcLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex | null;
  blockHash: Hex | null;
  logIndex: Hex | null;
  transactionHash: Hex | null;
  removed?: boolean;
}

/** Decodes a raw log; undefined when it is not a well-formed JobSubmitted of either layout. */
export function decodeJobSubmitted(log: RpcLog, seenAt = Date.now()): JobSubmittedEvent | undefined {
  if (
    log.topics[0]?.toLowerCase() !== JOB_SUBMITTED_TOPIC ||
    log.blockNumber === null ||
    log.logIndex === null
  ) {
    return undefined;
  }
  const abi = [log.topics.length === 4 ? layout4Topics : layout3Topics];
  try {
    const { args } = decodeEventLog({
      abi,
      data: log.data,
      topics: log.topics as [Hex, ...Hex[]],
      strict: true,
    });
    const a = args as unknown as {
      serviceId: bigint;
      callId: bigint;
      jobIndex: number;
      caller: Address;
      inputs: Hex;
    };
    return {
      serviceId: a.serviceId,
      callId: a.callId,
      jobIndex: Number(a.jobIndex),
      caller: a.caller,
      inputs: a.inputs,
      blockNumber: BigInt(log.blockNumber),
      logIndex: Number(log.logIndex),
      blockHash: log.blockHash ?? '0x',
      transactionHash: log.transactionHash ?? '0x',
      seenAt,
    };
  } catch {
    return undefined;
  }
}

export interface FetchJobLogsResult {
  events: JobSubmittedEvent[];
  /** Logs with the JobSubmitted topic that did not decode (logged by the caller, then ignored). */
  malformed: RpcLog[];
  /**
   * Logs the RPC returned although they do not match the filter: another contract's address, or a
   * block outside [from, to]. An honest node never sends them; they are refused, never decoded.
   */
  foreign: RpcLog[];
}

/** JobSubmitted logs of one service in [from, to], ordered by (block, logIndex). */
export async function fetchJobSubmitted(
  client: Pick<PublicClient, 'request'>,
  tangle: Address,
  serviceId: bigint,
  from: bigint,
  to: bigint,
): Promise<FetchJobLogsResult> {
  const logs = (await client.request({
    method: 'eth_getLogs',
    params: [
      {
        address: tangle,
        topics: [JOB_SUBMITTED_TOPIC, pad(numberToHex(serviceId), { size: 32 })],
        fromBlock: numberToHex(from),
        toBlock: numberToHex(to),
      },
    ],
  })) as RpcLog[];
  const seenAt = Date.now();
  const events: JobSubmittedEvent[] = [];
  const malformed: RpcLog[] = [];
  const foreign: RpcLog[] = [];
  const want = tangle.toLowerCase();
  for (const log of logs) {
    if (log.removed) continue;
    const n = log.blockNumber === null ? undefined : BigInt(log.blockNumber);
    if (
      typeof log.address !== 'string' ||
      log.address.toLowerCase() !== want ||
      n === undefined ||
      n < from ||
      n > to
    ) {
      foreign.push(log);
      continue;
    }
    const e = decodeJobSubmitted(log, seenAt);
    if (e && e.serviceId === serviceId) events.push(e);
    else malformed.push(log);
  }
  events.sort((x, y) =>
    x.blockNumber === y.blockNumber ? x.logIndex - y.logIndex : x.blockNumber < y.blockNumber ? -1 : 1,
  );
  return { events, malformed, foreign };
}
