// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";

/// @title BlueprintServiceManagerBase
/// @notice A deployable service manager that accepts everything: every hook of
///         IBlueprintServiceManager with a permissive default. Blueprints extend it and override
///         what they need; deployed bare it is a "toy" manager (any job index, no restrictions).
/// @dev Our own implementation of the protocol's hook surface. Hooks that Tangle calls are
///      restricted to Tangle (`onlyFromTangle`), learned from the first `onBlueprintCreated`.
contract BlueprintServiceManagerBase is IBlueprintServiceManager {
    /// The Tangle contract that created the blueprint (zero until onBlueprintCreated).
    address public tangleCore;
    /// The blueprint id Tangle assigned.
    uint64 public blueprintId;
    /// The blueprint's owner as Tangle reported it.
    address public blueprintOwner;

    error OnlyTangleAllowed(address caller, address tangle);
    error OnlyBlueprintOwnerAllowed(address caller, address owner);
    error BlueprintAlreadyCreated(uint64 blueprintId, address tangleCore);

    // The checks live in functions so each use costs a jump, not a copy (keeps blueprints
    // under the EIP-170 size limit).
    modifier onlyFromTangle() {
        _checkFromTangle();
        _;
    }

    modifier onlyBlueprintOwner() {
        _checkBlueprintOwner();
        _;
    }

    function _checkFromTangle() internal view {
        if (msg.sender != tangleCore) revert OnlyTangleAllowed(msg.sender, tangleCore);
    }

    function _checkBlueprintOwner() internal view {
        if (msg.sender != blueprintOwner) revert OnlyBlueprintOwnerAllowed(msg.sender, blueprintOwner);
    }

    // ── blueprint ──────────────────────────────────────────────────────────────────────────────

    /// First caller wins: it becomes `tangleCore`; any later call reverts.
    function onBlueprintCreated(uint64 _blueprintId, address owner, address) external virtual {
        if (tangleCore != address(0)) revert BlueprintAlreadyCreated(blueprintId, tangleCore);
        // The caller is Tangle (the argument names the same contract); trusting msg.sender means
        // later hooks are accepted only from the contract that really created the blueprint.
        tangleCore = msg.sender;
        blueprintId = _blueprintId;
        blueprintOwner = owner;
    }

    // ── operators ──────────────────────────────────────────────────────────────────────────────

    function onRegister(address, bytes calldata) external payable virtual onlyFromTangle {}

    function onUnregister(address) external virtual onlyFromTangle {}

    function onUpdatePreferences(address, bytes calldata) external payable virtual onlyFromTangle {}

    // ── service configuration queries (protocol defaults) ─────────────────────────────────────

    function getHeartbeatInterval(uint64) external view virtual returns (bool useDefault, uint64 interval) {
        return (true, 0);
    }

    function getHeartbeatThreshold(uint64) external view virtual returns (bool useDefault, uint8 threshold) {
        return (true, 0);
    }

    function getSlashingWindow(uint64) external view virtual returns (bool useDefault, uint64 window) {
        return (true, 0);
    }

    function getExitConfig(uint64)
        external
        view
        virtual
        returns (bool useDefault, uint64 minCommitmentDuration, uint64 exitQueueDuration, bool forceExitAllowed)
    {
        return (true, 0, 0, false);
    }

    /// The protocol's grace intervals.
    function getNonPaymentTerminationPolicy(uint64)
        external
        view
        virtual
        returns (bool useDefault, uint64 graceIntervals)
    {
        return (true, 0);
    }

    /// An emergency eviction keeps the protocol's minimum operator floor.
    function forceRemoveAllowsBelowMin(uint64) external view virtual returns (bool ok) {
        return false;
    }

    /// Bill in full.
    function computeBillAdjustmentBps(uint64, uint64, uint64) external view virtual returns (uint16 adjustmentBps) {
        return 10_000;
    }

    // ── service lifecycle ─────────────────────────────────────────────────────────────────────

    function onRequest(uint64, address, address[] calldata, bytes calldata, uint64, address, uint256)
        external
        payable
        virtual
        onlyFromTangle
    {}

    function onApprove(address, uint64, uint8) external payable virtual onlyFromTangle {}

    function onReject(address, uint64) external virtual onlyFromTangle {}

    function onServiceInitialized(uint64, uint64, uint64, address, address[] calldata, uint64)
        external
        virtual
        onlyFromTangle
    {}

    function onServiceTermination(uint64, address) external virtual onlyFromTangle {}

    // ── dynamic membership ────────────────────────────────────────────────────────────────────

    function canJoin(uint64, address) external view virtual returns (bool allowed) {
        return true;
    }

    function onOperatorJoined(uint64, address, uint16) external virtual onlyFromTangle {}

    function canLeave(uint64, address) external view virtual returns (bool allowed) {
        return true;
    }

    function onOperatorLeft(uint64, address) external virtual onlyFromTangle {}

    function onExitScheduled(uint64, address, uint64) external virtual onlyFromTangle {}

    function onExitCanceled(uint64, address) external virtual onlyFromTangle {}

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    function onJobCall(uint64, uint8, uint64, bytes calldata) external payable virtual onlyFromTangle {}

    function onJobResult(uint64, uint8, uint64, address, bytes32, bytes calldata)
        external
        payable
        virtual
        onlyFromTangle
    {}

    /// One result completes a job.
    function getRequiredResultCount(uint64, uint8) external view virtual returns (uint32 required) {
        return 1;
    }

    /// Must answer false: a failing call makes Tangle assume true and refuse plain results.
    function requiresAggregation(uint64, uint8) external view virtual returns (bool required) {
        return false;
    }

    function getAggregationThreshold(uint64, uint8)
        external
        view
        virtual
        returns (uint16 thresholdBps, uint8 thresholdType)
    {
        return (6700, 0);
    }

    function onAggregatedResult(uint64, uint8, uint64, bytes calldata, uint256, uint256[2] calldata, uint256[4] calldata)
        external
        virtual
        onlyFromTangle
    {}

    // ── slashing ──────────────────────────────────────────────────────────────────────────────

    function onUnappliedSlash(uint64, bytes calldata, uint8) external virtual onlyFromTangle {}

    function onSlash(uint64, bytes calldata, uint8) external virtual onlyFromTangle {}

    function querySlashingOrigin(uint64) external view virtual returns (address slashingOrigin) {
        return address(this);
    }

    function queryDisputeOrigin(uint64) external view virtual returns (address disputeOrigin) {
        return address(this);
    }

    // ── payments and stake ────────────────────────────────────────────────────────────────────

    function queryDeveloperPaymentAddress(uint64)
        external
        view
        virtual
        returns (address payable developerPaymentAddress)
    {
        return payable(blueprintOwner);
    }

    function queryIsPaymentAssetAllowed(uint64, address) external view virtual returns (bool isAllowed) {
        return true;
    }

    function getMinOperatorStake() external view virtual returns (bool useDefault, uint256 minStake) {
        return (true, 0);
    }

    // ── binary versions ───────────────────────────────────────────────────────────────────────

    function onBinaryVersionPublished(uint64, BinaryVersion calldata, string calldata)
        external
        virtual
        onlyFromTangle
    {}

    function onOperatorBinaryAcked(uint64, uint64, address) external virtual onlyFromTangle {}
}
