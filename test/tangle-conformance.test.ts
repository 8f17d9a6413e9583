// Conformance: every selector, event topic and struct layout this project uses of the Tangle core
// and of the hooks it calls, against a table of tnt-core 0.19 facts. The table was written from
// tnt-core's sources at commit 8a2b24c1ae2c9dad5a43654b2f5ab16cfe49397e (the public
// tangle-network/tnt-core): src/interfaces/ITangle*.sol and IBlueprintServiceManager.sol,
// src/libraries/Types.sol (struct field order and widths; enums are uint8 on the wire) and
// Errors.sol, src/core/Base.sol (ManagerHookFailed, _callManager), src/core/JobsSubmission.sol
// (JobSubmitted as the core emits it: jobIndex NOT indexed) and ServicesRequests.sol
// (TooManyPermittedCallers), src/core/Operators.sol (_registerOperator's staking checks) and
// src/facets/staking/StakingViewsFacet.sol (the staking views it calls; cross-checked against
// bindings/abi/IMultiAssetDelegation.json). A change to ITangle.sol, ITangleTypes.sol, LocalTangle*.sol or
// IBlueprintServiceManager.sol that drifts from the real router fails here.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  decodeRevertData,
  iBlueprintServiceManagerAbi,
  iMultiAssetDelegationAbi,
  iTangleAbi,
  localStakingAbi,
  localTangleAbi,
} from '@agent-sandbox/contracts';
import {
  type AbiParameter,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  type Hex,
  http,
  toEventSelector,
  toEventSignature,
  toFunctionSelector,
  toFunctionSignature,
  toHex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, inject, it } from 'vitest';

/** [canonical signature, selector, output tuple] of the core's functions we call or implement. */
const FUNCTIONS: ReadonlyArray<readonly [string, string, string]> = [
  ['addPermittedCaller(uint64,address)', '0x815d6a26', '()'],
  [
    'approveService((uint64,((uint8,address),uint16)[],uint256[4],uint256[2],(uint8,bytes32,bytes32,uint64)[]))',
    '0x6a46006b',
    '()',
  ],
  ['blueprintCount()', '0xc602d4fa', '(uint64)'],
  [
    'createBlueprint((string,bytes32,address,uint32,bool,(uint8,uint8,uint32,uint32,uint256,uint64,uint256),(string,string,string,string,string,string,string,string,string),(string,string,string,bytes,bytes)[],bytes,bytes,(uint8,(string,string,string),(uint8,uint8,string,string),(uint8,string,string),(string,string,string),(uint8,uint8,string,bytes32)[])[],uint8[]))',
    '0x3022f66c',
    '(uint64)',
  ],
  ['getBlueprint(uint64)', '0xb7696dbb', '((address,address,uint64,uint8,uint8,bool))'],
  ['getBlueprintConfig(uint64)', '0x563a89f9', '((uint8,uint8,uint32,uint32,uint256,uint64,uint256))'],
  ['getJobCall(uint64,uint64)', '0xa672bc0a', '((uint8,address,uint64,uint32,bool,bool,uint256))'],
  ['getOperatorPreferences(uint64,address)', '0xf32f9673', '((bytes,string))'],
  [
    'getService(uint64)',
    '0x3dc0d5fe',
    '((uint64,address,uint64,uint64,uint64,uint64,uint32,uint32,uint32,uint8,uint8,uint8,uint8))',
  ],
  ['getServiceOperators(uint64)', '0xbb207f1f', '(address[])'],
  [
    'getServiceRequest(uint64)',
    '0x5f9b4dfa',
    '((uint64,address,uint64,uint64,uint32,uint32,address,uint256,uint8,uint32,uint32,bool,uint8,bool))',
  ],
  ['isOperatorRegistered(uint64,address)', '0x64462595', '(bool)'],
  ['isPermittedCaller(uint64,address)', '0x2ec2bd03', '(bool)'],
  ['isServiceActive(uint64)', '0x2f46279f', '(bool)'],
  ['isServiceOperator(uint64,address)', '0xa595b21e', '(bool)'],
  // ITangleOperators; MultiAssetDelegation's startLeaving asks it (fail-closed).
  ['getOperatorTotalActiveServices(address)', '0x0ded8bf9', '(uint256)'],
  ['managerHookGasLimit()', '0x35ba86c3', '(uint256)'],
  ['registerOperator(uint64,bytes,string,bytes)', '0x7324e916', '()'],
  ['registerOperator(uint64,bytes,string)', '0xd4e1ab7c', '()'],
  ['rejectService(uint64)', '0x6d8b88c3', '()'],
  ['removePermittedCaller(uint64,address)', '0x5f359924', '()'],
  ['requestService(uint64,address[],bytes,address[],uint64,address,uint256,uint8)', '0xc841e26e', '(uint64)'],
  ['serviceCount()', '0x06237526', '(uint64)'],
  ['submitJob(uint64,uint8,bytes)', '0x3413e8ee', '(uint64)'],
  ['submitResult(uint64,uint64,bytes)', '0x2d07e655', '()'],
  ['submitResults(uint64,uint64[],bytes[])', '0xaacdba9f', '()'],
  ['terminateService(uint64)', '0x5b71c934', '()'],
  ['unregisterOperator(uint64)', '0x0afd3738', '()'],
  ['updateOperatorPreferences(uint64,bytes,string)', '0x909eac24', '()'],
];

/** [canonical signature, topic0, which inputs are indexed] as the core emits them. */
const EVENTS: ReadonlyArray<readonly [string, string, readonly boolean[]]> = [
  [
    'BlueprintCreated(uint64,address,address,string,bytes32)',
    '0x7ccd26bc6775ae4936200d467efc9a0e4e5f2fa8877e86faa1c7a1453a93a7fc',
    [true, true, false, false, false],
  ],
  [
    'JobCompleted(uint64,uint64)',
    '0x60a7649f6e93e7a3ce1dc9729c20e3d95dce28c6a6bd957cde09d8a1cb37c19f',
    [true, true],
  ],
  [
    'JobResultSubmitted(uint64,uint64,address,bytes)',
    '0x8a04f99fe23284e874e8dd017345248279cc59701695e73bcdbeb6241bcd2ac6',
    [true, true, true, false],
  ],
  [
    'JobSubmitted(uint64,uint64,uint8,address,bytes)',
    '0xde37cc48d21778e1c9a075c4e41c5aff6918c3ea6151221f0af3ce8121a29db5',
    [true, true, false, false, false],
  ],
  [
    'ManagerHookFailed(address,bytes4,bytes)',
    '0x212b3bea93ba3eefbae6d15f7c17ac0868f3f756aacdd24d0bd69b0cbab22327',
    [true, true, false],
  ],
  [
    'OperatorPreferencesUpdated(uint64,address,bytes,string)',
    '0xbaca468a52670b77d74d0423b33ac5227a7f1a5c548e07006b29c6e2289779a6',
    [true, true, false, false],
  ],
  [
    'OperatorRegistered(uint64,address,bytes,string)',
    '0x0455541bf5feb5fcc32e827dc18bf2175448427c6ae72c8d5e985c99e4104102',
    [true, true, false, false],
  ],
  [
    'OperatorUnregistered(uint64,address)',
    '0x88e46e95bcdf1020c0caf9f3dd5fde69c41d2151dbbca0a77c03c4e28b4d3ec1',
    [true, true],
  ],
  [
    'ServiceActivated(uint64,uint64,uint64,uint8)',
    '0x0325bb1c453505f13d5546dda087be5e237f7cf249f79a0ee406d97ef0ca7ee9',
    [true, true, true, false],
  ],
  [
    'ServiceApproved(uint64,address)',
    '0xceda1a44ead4da3d3abaaa941afa6d9530fd84dd8e99385c9183d986dcab980f',
    [true, true],
  ],
  [
    'ServiceRejected(uint64,address)',
    '0xc63050b963ec6e2cf36df90ecacaa43212c0e74b8c3a58a0f8cce3bd5a2a7675',
    [true, true],
  ],
  [
    'ServiceRequested(uint64,uint64,address,uint8)',
    '0x5c92301c22df4cc7209a8b0b25b2f5787750237e110e09a276a9f7d16e6709a4',
    [true, true, true, false],
  ],
  ['ServiceTerminated(uint64)', '0x3fd558a59bbce1d996d17eab7fde314bcd201ec3f17375a7f873b3162927e881', [true]],
];

/** [canonical signature, selector] of the errors (Errors.sol, ServicesRequests.sol). */
const ERRORS: ReadonlyArray<readonly [string, string]> = [
  ['AggregationRequired(uint64,uint8)', '0x77164cdc'],
  ['AlreadyApproved(uint64,address)', '0xf2bb0f10'],
  ['BlueprintBinaryHashRequired()', '0x6e66aa92'],
  ['BlueprintBinaryRequired()', '0x86601035'],
  ['BlueprintMembershipRequired()', '0x81ea367e'],
  ['BlueprintMetadataHashRequired()', '0xe772efb4'],
  ['BlueprintMetadataRequired()', '0x0f038c7e'],
  ['BlueprintNotActive(uint64)', '0x421d69da'],
  ['BlueprintNotFound(uint64)', '0x5fd248ec'],
  ['BlueprintSourcesRequired()', '0x9eec318b'],
  ['DuplicateOperatorKey(uint64,bytes32)', '0x9d287736'],
  ['InsufficientOperators(uint32,uint32)', '0xeb8e175d'],
  ['InvalidJobIndex(uint8)', '0x1370bcad'],
  ['InvalidMsgValue(uint256,uint256)', '0x1f89f671'],
  ['InvalidOperatorKey()', '0xda2cd52b'],
  ['InvalidState()', '0xbaf3f0f7'],
  ['JobAlreadyCompleted(uint64,uint64)', '0x0a55512f'],
  ['JobCallNotFound(uint64,uint64)', '0x96c6ebfc'],
  ['LengthMismatch()', '0xff633a38'],
  ['ManagerRejected(address)', '0x71cc0e9a'],
  ['ManagerReverted(address,bytes)', '0x07a84ec2'],
  ['NoOperators()', '0xddf9d245'],
  ['NotPermittedCaller(uint64,address)', '0xd5dd5b44'],
  ['NotServiceOwner(uint64,address)', '0x19aacf9e'],
  ['OperatorAlreadyRegistered(uint64,address)', '0x9ec4e30d'],
  ['OperatorHasActiveServices(uint64,address)', '0x7cc22904'],
  ['OperatorNotInService(uint64,address)', '0x783482e9'],
  ['OperatorNotRegistered(uint64,address)', '0x9bcccbfd'],
  ['OperatorRpcAddressRequired()', '0x7ff7f798'],
  ['PaymentTooSmall(uint256,uint256)', '0x3beb8e0f'],
  ['ResultAlreadySubmitted(uint64,uint64,address)', '0xb7e7fcee'],
  ['ServiceExpired(uint64)', '0x7c3e621b'],
  ['ServiceNotActive(uint64)', '0x4c5fe2d8'],
  ['ServiceNotFound(uint64)', '0xc8a28bb6'],
  ['ServiceRequestAlreadyProcessed(uint64)', '0x9481228c'],
  ['ServiceRequestExpiredError(uint64)', '0xdf0ba7da'],
  ['ServiceRequestNotFound(uint64)', '0x246c2d66'],
  ['TTLAboveMaximum(uint64,uint64)', '0x879a50bb'],
  ['TTLBelowMinimum(uint64,uint64)', '0xe83b5554'],
  ['TokenNotAllowed(address)', '0x94403b70'],
  ['TooManyOperators(uint32,uint32)', '0x7e33e8e4'],
  ['Unauthorized()', '0x82b42900'],
  ['UpfrontPaymentNotAllowedForEventDriven()', '0x889fa9e0'],
  ['TooManyPermittedCallers(uint256,uint256)', '0xb8d2f99d'],
  ['PaymentFailed()', '0xf499da20'],
  // Operators._registerOperator's staking refusals.
  ['OperatorNotActive(address)', '0xe356d5aa'],
  ['InsufficientStake(address,uint256,uint256)', '0x936d426d'],
];

/**
 * The staking contract (MultiAssetDelegation) as the core reads it when an operator registers, in
 * this order: isOperatorActive(sender) else OperatorNotActive(sender); then after the key checks
 * minOperatorStake(), replaced by the manager's getMinOperatorStake() when it answers
 * (false, m > 0); meetsStakeRequirement(sender, min) (total stake >= min) else
 * InsufficientStake(sender, min, getOperatorStake(sender)). Plus the operator-side calls of the
 * `stake` tool. [signature, selector, outputs].
 */
const STAKING: ReadonlyArray<readonly [string, string, string]> = [
  ['getOperatorSelfStake(address)', '0xd673e0b9', '(uint256)'],
  ['getOperatorStake(address)', '0xe4e88de8', '(uint256)'],
  ['increaseStake()', '0xd9e257ef', '()'],
  ['increaseStakeWithAsset(address,uint256)', '0xe5e27b6a', '()'],
  ['isOperator(address)', '0x6d70f7ae', '(bool)'],
  ['isOperatorActive(address)', '0xeb473533', '(bool)'],
  ['meetsStakeRequirement(address,uint256)', '0xf46913bb', '(bool)'],
  ['minOperatorStake()', '0xd775cb61', '(uint256)'],
  ['operatorBondToken()', '0x0f157fb9', '(address)'],
  ['registerOperator()', '0x2acde098', '()'],
  ['registerOperatorWithAsset(address,uint256)', '0xe0a5825b', '()'],
  // OperatorManager._startLeaving: inactive at once; refused while the core counts an active service.
  ['startLeaving()', '0x87703550', '()'],
  // The admin side (StakingAdminFacet.setTangle, DelegationStorage.ADMIN_ROLE) the devnet wires.
  ['setTangle(address)', '0xbf5274a7', '()'],
  ['ADMIN_ROLE()', '0x75b238fc', '(bytes32)'],
];

/**
 * The staking contract's refusals the `stake` tool can meet (tnt-core 8a2b24c DelegationErrors and
 * OperatorManager), and the bond token's own: with a bond token set (LocalTestnet bonds in TNT)
 * registerOperatorWithAsset moves it with SafeERC20.safeTransferFrom, so OpenZeppelin 5's ERC-6093
 * errors reach the caller (seen on the real LocalTestnet: ERC20InsufficientBalance from a fresh
 * account). [canonical signature, selector].
 */
const STAKING_ERRORS: ReadonlyArray<readonly [string, string]> = [
  ['OperatorAlreadyRegistered(address)', '0x866b0dcf'],
  ['OperatorNotRegistered(address)', '0xbd620133'],
  ['OperatorBondTokenOnly(address)', '0x5da00316'],
  ['AssetNotEnabled(address)', '0xf6f24b83'],
  ['InsufficientStake(uint256,uint256)', '0x45be0a26'],
  ['OperatorNotActive(address)', '0xe356d5aa'],
  ['ZeroAmount()', '0x1f2a2005'],
  ['OperatorHasActiveServices(address)', '0x11f6b5e6'],
  ['ActiveServiceCheckUnavailable(address)', '0xd077f707'],
  ['AccessControlUnauthorizedAccount(address,bytes32)', '0xe2517d3f'],
  ['ERC20InsufficientBalance(address,uint256,uint256)', '0xe450d38c'],
  ['ERC20InsufficientAllowance(address,uint256,uint256)', '0xfb8f41b2'],
  ['SafeERC20FailedOperation(address)', '0x5274afe7'],
];

/** [canonical signature, selector] of every IBlueprintServiceManager hook of 0.19. */
const HOOKS: ReadonlyArray<readonly [string, string]> = [
  ['canJoin(uint64,address)', '0xb47242e8'],
  ['canLeave(uint64,address)', '0xe518de76'],
  ['computeBillAdjustmentBps(uint64,uint64,uint64)', '0xf93ff2b7'],
  ['forceRemoveAllowsBelowMin(uint64)', '0xf3e28f32'],
  ['getAggregationThreshold(uint64,uint8)', '0x25fcc64e'],
  ['getExitConfig(uint64)', '0xd2672ed4'],
  ['getHeartbeatInterval(uint64)', '0x0068080b'],
  ['getHeartbeatThreshold(uint64)', '0x92cbb78e'],
  ['getMinOperatorStake()', '0x54dce6c2'],
  ['getNonPaymentTerminationPolicy(uint64)', '0x71e8e85d'],
  ['getRequiredResultCount(uint64,uint8)', '0x4c443e04'],
  ['getSlashingWindow(uint64)', '0x3fdadfcc'],
  ['onAggregatedResult(uint64,uint8,uint64,bytes,uint256,uint256[2],uint256[4])', '0x158bb2eb'],
  ['onApprove(address,uint64,uint8)', '0xb159eb34'],
  ['onBinaryVersionPublished(uint64,(uint64,uint64,bool,bytes32,bytes32),string)', '0x15034413'],
  ['onBlueprintCreated(uint64,address,address)', '0x0b6535d7'],
  ['onExitCanceled(uint64,address)', '0x5440662c'],
  ['onExitScheduled(uint64,address,uint64)', '0xe0559c63'],
  ['onJobCall(uint64,uint8,uint64,bytes)', '0x9838caa3'],
  ['onJobResult(uint64,uint8,uint64,address,bytes32,bytes)', '0xe649fc03'],
  ['onOperatorBinaryAcked(uint64,uint64,address)', '0xcd81472b'],
  ['onOperatorJoined(uint64,address,uint16)', '0x9aa26a92'],
  ['onOperatorLeft(uint64,address)', '0x965d231b'],
  ['onRegister(address,bytes)', '0x67793cc6'],
  ['onReject(address,uint64)', '0xc9cd4a18'],
  ['onRequest(uint64,address,address[],bytes,uint64,address,uint256)', '0xc28cd812'],
  ['onServiceInitialized(uint64,uint64,uint64,address,address[],uint64)', '0x82a1ece4'],
  ['onServiceTermination(uint64,address)', '0xa24e8a90'],
  ['onSlash(uint64,bytes,uint8)', '0x7e14b919'],
  ['onUnappliedSlash(uint64,bytes,uint8)', '0x0881898f'],
  ['onUnregister(address)', '0x151a4576'],
  ['onUpdatePreferences(address,bytes)', '0xf58e2066'],
  ['queryDeveloperPaymentAddress(uint64)', '0x08179f35'],
  ['queryDisputeOrigin(uint64)', '0x14b4df4c'],
  ['queryIsPaymentAssetAllowed(uint64,address)', '0xe390fcdb'],
  ['querySlashingOrigin(uint64)', '0x74ceeb55'],
  ['requiresAggregation(uint64,uint8)', '0x19ed5bb2'],
];

/** The stand-in's own additions: none is a call or event, only its refusal of what it cannot check. */
const LOCAL_ONLY_ERRORS = new Set(['LocalUnsupported(string)']);

/** Selectors the stand-in once had and the real router does not know. */
const NOT_ON_THE_REAL_ROUTER = [
  'HOOK_GAS',
  'activeServiceCount',
  'getJobInputsHash',
  'hasSubmittedResult',
  'jobCallCount',
  'setPermittedCaller',
];

const tupleType = (o: readonly AbiParameter[]): string =>
  `(${o
    .map((x) =>
      x.type.startsWith('tuple') && 'components' in x
        ? `${tupleType(x.components as readonly AbiParameter[])}${x.type.slice(5)}`
        : x.type,
    )
    .join(',')})`;
type Item = {
  type: string;
  name?: string;
  inputs?: readonly AbiParameter[];
  outputs?: readonly AbiParameter[];
};
const errorSig = (i: Item) => toFunctionSignature({ ...i, type: 'function', outputs: [] } as never);

describe('the table of tnt-core 0.19 facts', () => {
  it('is self-consistent (each selector and topic is the keccak of its signature)', () => {
    for (const [sig, sel] of [...FUNCTIONS, ...ERRORS, ...HOOKS, ...STAKING, ...STAKING_ERRORS])
      expect(toFunctionSelector(sig), sig).toBe(sel);
    for (const [sig, topic] of EVENTS) expect(toEventSelector(sig), sig).toBe(topic);
  });
});

describe.each([
  ['ITangle', iTangleAbi as readonly Item[]],
  ['LocalTangle', localTangleAbi as readonly Item[]],
])('%s against tnt-core 0.19', (_name, abi) => {
  it('has only real functions, with the real selectors and return layouts', () => {
    const table = new Map(FUNCTIONS.map(([sig, sel, out]) => [sig, { sel, out }]));
    for (const f of abi.filter((i) => i.type === 'function')) {
      const sig = toFunctionSignature(f as never);
      const fact = table.get(sig);
      expect(fact, `${sig} is not a 0.19 function`).toBeDefined();
      expect(toFunctionSelector(f as never)).toBe(fact?.sel);
      expect(tupleType(f.outputs ?? []), `${sig} returns`).toBe(fact?.out);
    }
  });

  it('emits only real events, indexed as the core emits them', () => {
    const table = new Map(EVENTS.map(([sig, topic, indexed]) => [sig, { topic, indexed }]));
    for (const e of abi.filter((i) => i.type === 'event')) {
      const sig = toEventSignature(e as never);
      const fact = table.get(sig);
      expect(fact, `${sig} is not a 0.19 event`).toBeDefined();
      expect(toEventSelector(e as never)).toBe(fact?.topic);
      expect(
        (e.inputs ?? []).map((p) => Boolean((p as { indexed?: boolean }).indexed)),
        sig,
      ).toEqual(fact?.indexed);
    }
  });

  it('reverts with the real errors (and its one LocalUnsupported)', () => {
    const table = new Map(ERRORS);
    for (const x of abi.filter((i) => i.type === 'error')) {
      const sig = errorSig(x);
      if (LOCAL_ONLY_ERRORS.has(sig)) continue;
      expect(table.get(sig), `${sig} is not a 0.19 error`).toBe(toFunctionSelector(sig));
    }
  });

  it('carries none of the selectors the real router does not know', () => {
    const names = new Set(abi.map((i) => i.name));
    for (const n of NOT_ON_THE_REAL_ROUTER) expect(names.has(n), n).toBe(false);
  });
});

describe.each([
  ['IMultiAssetDelegation', iMultiAssetDelegationAbi as readonly Item[]],
  ['LocalStaking', localStakingAbi as readonly Item[]],
])('%s against tnt-core 0.19 staking', (_name, abi) => {
  it('has every view registration reads and only real functions, with real selectors and layouts', () => {
    const table = new Map(STAKING.map(([sig, sel, out]) => [sig, { sel, out }]));
    const ours = abi.filter((i) => i.type === 'function').map((f) => toFunctionSignature(f as never));
    for (const sig of ours) {
      const f = abi.find((i) => i.type === 'function' && toFunctionSignature(i as never) === sig)!;
      expect(table.get(sig), `${sig} is not a 0.19 staking function`).toBeDefined();
      expect(toFunctionSelector(sig)).toBe(table.get(sig)?.sel);
      expect(tupleType(f.outputs ?? []), `${sig} returns`).toBe(table.get(sig)?.out);
    }
    const errors = abi.filter((i) => i.type === 'error').map(errorSig);
    const errTable = new Map(STAKING_ERRORS);
    for (const sig of errors) {
      expect(errTable.get(sig), `${sig} is not a 0.19 staking (or bond token) error`).toBeDefined();
      expect(toFunctionSelector(sig)).toBe(errTable.get(sig));
    }
    for (const needed of [
      'isOperatorActive(address)',
      'minOperatorStake()',
      'meetsStakeRequirement(address,uint256)',
      'getOperatorStake(address)',
    ])
      expect(ours, needed).toContain(needed);
  });
});

describe('registration checks staking as tnt-core 0.19 does (the devnet: LocalTangle over LocalStaking)', () => {
  it('an account that never staked is refused OperatorNotActive(account), by its own name', async () => {
    const devnet = inject('devnet');
    const pub = createPublicClient({ transport: http(devnet.rpcUrl) });
    const account = privateKeyToAccount(generatePrivateKey());
    await pub.request({
      method: 'anvil_setBalance' as never,
      params: [account.address, toHex(10n ** 18n)] as never,
    });
    const e = await pub
      .simulateContract({
        account,
        address: devnet.contracts.tangle,
        abi: iTangleAbi,
        functionName: 'registerOperator',
        args: [BigInt(devnet.blueprints.cloud), account.publicKey, 'http://127.0.0.1:1'],
      })
      .then(
        () => undefined,
        (x: unknown) => x,
      );
    expect(e, 'registration without stake must revert').toBeInstanceOf(BaseError);
    const reverted = (e as BaseError).walk((x) => x instanceof ContractFunctionRevertedError) as
      | (ContractFunctionRevertedError & { raw?: Hex })
      | null;
    const decoded = reverted?.raw ? decodeRevertData(reverted.raw) : undefined;
    expect(decoded).toMatchObject({ errorName: 'OperatorNotActive', args: [account.address] });
    expect(decoded?.manager).toBeUndefined();
  });
});

describe('IBlueprintServiceManager against tnt-core 0.19', () => {
  it('declares every 0.19 hook, with the real selectors, and nothing else', () => {
    const ours = (iBlueprintServiceManagerAbi as readonly Item[])
      .filter((i) => i.type === 'function')
      .map((f) => [toFunctionSignature(f as never), toFunctionSelector(f as never)] as const);
    expect(new Map(ours)).toEqual(new Map(HOOKS));
  });
});

/** Every product source file (not tests, not dev tooling). */
function productSources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (['node_modules', 'dist', 'out', 'abi', 'cache', 'testing', 'test', '.git'].includes(name)) continue;
    if (statSync(p).isDirectory()) productSources(p, out);
    else if (/\.(ts|tsx|sol)$/.test(name) && !/\.test\.tsx?$|\.t\.sol$/.test(name)) out.push(p);
  }
  return out;
}

describe('nothing of ours depends on a call the real router lacks', () => {
  it('no product source outside the devnet names one', () => {
    const root = join(import.meta.dirname, '..');
    const dirs = [
      'sdk',
      'runtime',
      'blueprint-lib',
      'blueprint-bin',
      'client',
      'console',
      'contracts/src',
      'attestation',
    ];
    const hits: string[] = [];
    for (const d of dirs) {
      for (const file of productSources(join(root, d))) {
        const text = readFileSync(file, 'utf8');
        for (const n of NOT_ON_THE_REAL_ROUTER)
          if (new RegExp(`\\b${n}\\b`).test(text)) hits.push(`${file}: ${n}`);
      }
    }
    expect(hits).toEqual([]);
  });
});
