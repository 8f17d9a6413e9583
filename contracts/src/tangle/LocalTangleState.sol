// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangle} from "./ITangle.sol";
import {IMultiAssetDelegation} from "./IMultiAssetDelegation.sol";

/// @title LocalTangleState
/// @notice LocalTangle's records (blueprints, registrations, requests, services, job calls), the
///         lookups that revert on a missing one, and the three ways the real core calls a
///         blueprint's manager: reverting (`_callManager`), best-effort (`_tryCallManager`) and
///         view (`_tryStaticcallManager`), each with the manager hook gas cap.
///         Split out only to keep each file readable: LocalTangle is the one deployed contract.
abstract contract LocalTangleState is ITangle {
    /// The protocol's default hook gas budget (tnt-core's MANAGER_HOOK_GAS_LIMIT_DEFAULT).
    uint256 internal constant HOOK_GAS_LIMIT = 500_000;
    /// The protocol's MIN_SERVICE_TTL / MAX_SERVICE_TTL / REQUEST_EXPIRY_GRACE_PERIOD.
    uint64 internal constant MIN_SERVICE_TTL = 1 hours;
    uint64 internal constant MAX_SERVICE_TTL = 365 days;
    uint64 internal constant REQUEST_EXPIRY_GRACE_PERIOD = 1 hours;
    /// The protocol's DEFAULT_MAX_OPERATORS_PER_SERVICE and PaymentLib's MINIMUM_PAYMENT_AMOUNT.
    uint32 internal constant MAX_OPERATORS_PER_SERVICE = 128;
    uint256 internal constant MINIMUM_PAYMENT_AMOUNT = 100;

    /// Something the real protocol validates that the stand-in does not implement: refused.
    error LocalUnsupported(string what);
    /// The real router's own (ServicesRequests) cap and the refund failure of PaymentLib.
    error TooManyPermittedCallers(uint256 supplied, uint256 max);
    error PaymentFailed();

    struct BlueprintRecord {
        Blueprint info;
        BlueprintConfig config;
        uint8 jobCount;
        bytes registrationSchema;
        bytes requestSchema;
    }

    struct Registration {
        uint64 registeredAt;
        bytes ecdsaPublicKey;
    }

    struct RequestRecord {
        ServiceRequest info;
        address[] operators;
        address[] permittedCallers;
        mapping(address => bool) approved;
    }

    struct ServiceRecord {
        Service info;
        uint64 callCount;
        address[] operators;
        mapping(address => bool) isOperator;
        mapping(address => bool) permitted;
    }

    struct CallRecord {
        JobCall info;
        bytes32 inputsHash;
        mapping(address => bool) submitted;
    }

    /// The staking contract registration consults (the real core's `_staking`, set at initialize).
    IMultiAssetDelegation internal immutable _staking;

    constructor(IMultiAssetDelegation staking) {
        _staking = staking;
    }

    uint64 internal _blueprintCount;
    uint64 internal _requestCount;
    uint64 internal _serviceCount;

    mapping(uint64 => BlueprintRecord) internal _blueprints;
    mapping(uint64 => mapping(address => Registration)) internal _registrations;
    /// blueprint => keccak256(key) => operator (a gossip key serves one operator per blueprint).
    mapping(uint64 => mapping(bytes32 => address)) internal _operatorKeys;
    mapping(uint64 => RequestRecord) internal _requests;
    mapping(uint64 => ServiceRecord) internal _services;
    mapping(uint64 => mapping(uint64 => CallRecord)) internal _calls;
    /// Active services an operator serves per blueprint (blocks unregistering).
    mapping(uint64 => mapping(address => uint32)) internal _activeServices;

    function blueprintCount() external view returns (uint64) {
        return _blueprintCount;
    }

    function serviceCount() external view returns (uint64) {
        return _serviceCount;
    }

    function managerHookGasLimit() external pure returns (uint256) {
        return HOOK_GAS_LIMIT;
    }

    // ── lookups (reverting, as the core's _get* helpers) ───────────────────────────────────────

    function _blueprint(uint64 blueprintId) internal view returns (BlueprintRecord storage b) {
        if (blueprintId >= _blueprintCount) revert BlueprintNotFound(blueprintId);
        b = _blueprints[blueprintId];
    }

    function _request(uint64 requestId) internal view returns (RequestRecord storage q) {
        if (requestId >= _requestCount) revert ServiceRequestNotFound(requestId);
        q = _requests[requestId];
    }

    function _service(uint64 serviceId) internal view returns (ServiceRecord storage s) {
        if (serviceId >= _serviceCount) revert ServiceNotFound(serviceId);
        s = _services[serviceId];
    }

    function _call(uint64 serviceId, uint64 callId) internal view returns (CallRecord storage c) {
        if (callId >= _services[serviceId].callCount) revert JobCallNotFound(serviceId, callId);
        c = _calls[serviceId][callId];
    }

    function _managerOf(uint64 blueprintId) internal view returns (address) {
        return _blueprints[blueprintId].info.manager;
    }

    // ── manager calls ─────────────────────────────────────────────────────────────────────────

    /// A reverting hook: any failure reverts the protocol call, the manager's revert data wrapped
    /// in ManagerReverted (ManagerRejected when there is none, e.g. out of the gas cap).
    function _callManager(address manager, bytes memory data) internal {
        (bool ok, bytes memory ret) = manager.call{gas: HOOK_GAS_LIMIT}(data);
        if (ok) return;
        if (ret.length > 0) revert ManagerReverted(manager, ret);
        revert ManagerRejected(manager);
    }

    /// A best-effort hook: a failure emits ManagerHookFailed (with all its return data) and the
    /// protocol call goes on. Like the real core it forwards min(cap, 63/64 of what is left), so
    /// a transaction sent with too little gas can starve the hook without reverting.
    function _tryCallManager(address manager, bytes memory data) internal {
        (bool ok, bytes memory ret) = manager.call{gas: HOOK_GAS_LIMIT}(data);
        if (!ok) emit ManagerHookFailed(manager, bytes4(data), ret);
    }

    /// A view hook: (false, "") on a zero manager, a revert, or an answer shorter than `minLen`.
    function _tryStaticcallManager(address manager, bytes memory data, uint256 minLen)
        internal
        view
        returns (bool ok, bytes memory ret)
    {
        if (manager == address(0)) return (false, "");
        (ok, ret) = manager.staticcall{gas: HOOK_GAS_LIMIT}(data);
        if (!ok || ret.length < minLen) return (false, "");
    }
}
