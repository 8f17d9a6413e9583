// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title IBlueprintServiceManager
/// @notice The hooks Tangle (v2, tnt-core 0.19.x) calls on a blueprint's service manager (BSM).
/// @dev Signatures are kept exactly as the real protocol calls them, so a BSM written against this
///      interface works unchanged behind a real Tangle deployment. How Tangle treats each hook
///      (reverting, best-effort under a gas cap, staticcall with a fallback) is noted per hook.
interface IBlueprintServiceManager {
    /// tnt-core's Types.BinaryVersion (onBinaryVersionPublished's record).
    struct BinaryVersion {
        uint64 versionId;
        uint64 publishedAt;
        bool deprecated;
        bytes32 sha256Hash;
        bytes32 attestationHash;
    }

    // ── blueprint ──────────────────────────────────────────────────────────────────────────────

    /// Called once at createBlueprint; the first caller wins.
    function onBlueprintCreated(uint64 blueprintId, address owner, address tangleCore) external;

    // ── operators ──────────────────────────────────────────────────────────────────────────────

    /// Reverting: a revert blocks the registration.
    function onRegister(address operator, bytes calldata registrationInputs) external payable;

    /// Best-effort.
    function onUnregister(address operator) external;

    /// Best-effort.
    function onUpdatePreferences(address operator, bytes calldata newPreferences) external payable;

    // ── service configuration queries ─────────────────────────────────────────────────────────

    function getHeartbeatInterval(uint64 serviceId) external view returns (bool useDefault, uint64 interval);

    function getHeartbeatThreshold(uint64 serviceId) external view returns (bool useDefault, uint8 threshold);

    function getSlashingWindow(uint64 serviceId) external view returns (bool useDefault, uint64 window);

    function getExitConfig(uint64 serviceId)
        external
        view
        returns (bool useDefault, uint64 minCommitmentDuration, uint64 exitQueueDuration, bool forceExitAllowed);

    /// Staticcall at terminateServiceForNonPayment; (true, _) keeps the protocol's grace.
    function getNonPaymentTerminationPolicy(uint64 serviceId)
        external
        view
        returns (bool useDefault, uint64 graceIntervals);

    /// Staticcall at forceRemoveOperator: may an eviction take the service below its minimum?
    function forceRemoveAllowsBelowMin(uint64 serviceId) external view returns (bool ok);

    /// Staticcall at each subscription bill: the share of the bill to charge (10,000 = all).
    function computeBillAdjustmentBps(uint64 serviceId, uint64 periodStart, uint64 periodEnd)
        external
        view
        returns (uint16 adjustmentBps);

    // ── service lifecycle ─────────────────────────────────────────────────────────────────────

    /// Reverting: a revert blocks the request.
    function onRequest(
        uint64 requestId,
        address requester,
        address[] calldata operators,
        bytes calldata requestInputs,
        uint64 ttl,
        address paymentAsset,
        uint256 paymentAmount
    ) external payable;

    /// Best-effort.
    function onApprove(address operator, uint64 requestId, uint8 stakingPercent) external payable;

    /// Best-effort.
    function onReject(address operator, uint64 requestId) external;

    /// Best-effort; called once every listed operator approved.
    function onServiceInitialized(
        uint64 blueprintId,
        uint64 requestId,
        uint64 serviceId,
        address owner,
        address[] calldata permittedCallers,
        uint64 ttl
    ) external;

    /// Best-effort.
    function onServiceTermination(uint64 serviceId, address owner) external;

    // ── dynamic membership ────────────────────────────────────────────────────────────────────

    function canJoin(uint64 serviceId, address operator) external view returns (bool allowed);

    function onOperatorJoined(uint64 serviceId, address operator, uint16 exposureBps) external;

    function canLeave(uint64 serviceId, address operator) external view returns (bool allowed);

    function onOperatorLeft(uint64 serviceId, address operator) external;

    function onExitScheduled(uint64 serviceId, address operator, uint64 executeAfter) external;

    function onExitCanceled(uint64 serviceId, address operator) external;

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    /// Reverting: a revert reverts the job submission. Tangle has recorded the call (caller,
    /// createdAt) before it calls this hook, so `getJobCall` answers inside it.
    function onJobCall(uint64 serviceId, uint8 job, uint64 jobCallId, bytes calldata inputs) external payable;

    /// Best-effort: it cannot reject a result. It gets only the inputs' hash.
    function onJobResult(
        uint64 serviceId,
        uint8 job,
        uint64 jobCallId,
        address operator,
        bytes32 inputsHash,
        bytes calldata outputs
    ) external payable;

    /// Staticcall; Tangle assumes 1 if it fails.
    function getRequiredResultCount(uint64 serviceId, uint8 jobIndex) external view returns (uint32 required);

    /// Staticcall; Tangle assumes TRUE if it fails (and submitResult then reverts).
    function requiresAggregation(uint64 serviceId, uint8 jobIndex) external view returns (bool required);

    function getAggregationThreshold(uint64 serviceId, uint8 jobIndex)
        external
        view
        returns (uint16 thresholdBps, uint8 thresholdType);

    function onAggregatedResult(
        uint64 serviceId,
        uint8 job,
        uint64 jobCallId,
        bytes calldata output,
        uint256 signerBitmap,
        uint256[2] calldata aggregatedSignature,
        uint256[4] calldata aggregatedPubkey
    ) external;

    // ── slashing ──────────────────────────────────────────────────────────────────────────────

    function onUnappliedSlash(uint64 serviceId, bytes calldata offender, uint8 slashPercent) external;

    function onSlash(uint64 serviceId, bytes calldata offender, uint8 slashPercent) external;

    function querySlashingOrigin(uint64 serviceId) external view returns (address slashingOrigin);

    function queryDisputeOrigin(uint64 serviceId) external view returns (address disputeOrigin);

    // ── payments and stake ────────────────────────────────────────────────────────────────────

    function queryDeveloperPaymentAddress(uint64 serviceId)
        external
        view
        returns (address payable developerPaymentAddress);

    function queryIsPaymentAssetAllowed(uint64 serviceId, address asset) external view returns (bool isAllowed);

    function getMinOperatorStake() external view returns (bool useDefault, uint256 minStake);

    // ── binary versions ───────────────────────────────────────────────────────────────────────

    /// Best-effort, after the blueprint owner published a binary version.
    function onBinaryVersionPublished(uint64 blueprintId, BinaryVersion calldata version, string calldata binaryUri)
        external;

    /// Best-effort, after a service operator acknowledged a binary version.
    function onOperatorBinaryAcked(uint64 serviceId, uint64 versionId, address operator) external;
}
