// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangle} from "./ITangle.sol";
import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";

/// @title LocalTangleState
/// @notice LocalTangle's records (blueprints, registrations, requests, services, job calls), the
///         lookups that revert on a missing one, and the calls it makes into a blueprint's manager.
///         Split out only to keep each file readable: LocalTangle is the one deployed contract.
abstract contract LocalTangleState is ITangle {
    /// Gas given to each best-effort hook (as the protocol's default).
    uint256 public constant HOOK_GAS = 500_000;
    /// Most bytes of a failed hook's return data kept in ManagerHookFailed.
    uint256 internal constant MAX_RETURN_COPY = 512;

    struct BlueprintRecord {
        address owner;
        address manager;
        uint64 createdAt;
        bool exists;
        string metadataUri;
    }

    struct Registration {
        bool registered;
        bytes ecdsaPublicKey;
        string rpcAddress;
    }

    struct Request {
        uint64 blueprintId;
        address requester;
        uint64 createdAt;
        uint64 ttl;
        address paymentToken;
        uint256 paymentAmount;
        uint8 confidentiality;
        uint32 approvalCount;
        bool exists;
        bool processed; // activated or rejected
        address[] operators;
        address[] permittedCallers;
        bytes config;
        mapping(address => bool) approved;
    }

    struct ServiceRecord {
        Service info;
        uint64 requestId;
        uint64 callCount;
        bool exists;
        address[] operators;
        mapping(address => bool) isOperator;
        mapping(address => bool) permitted;
    }

    struct CallRecord {
        JobCall info;
        bytes32 inputsHash;
        bool exists;
        mapping(address => bool) submitted;
    }

    uint64 public blueprintCount;
    uint64 public serviceRequestCount;
    uint64 public serviceCount;

    mapping(uint64 => BlueprintRecord) internal _blueprints;
    mapping(uint64 => mapping(address => Registration)) internal _registrations;
    mapping(uint64 => Request) internal _requests;
    mapping(uint64 => ServiceRecord) internal _services;
    mapping(uint64 => mapping(uint64 => CallRecord)) internal _calls;
    /// Active services an operator serves per blueprint (blocks unregistering).
    mapping(uint64 => mapping(address => uint32)) public activeServiceCount;

    // ── lookups ──────────────────────────────────────────────────────────────────────────────

    function _request(uint64 requestId) internal view returns (Request storage q) {
        q = _requests[requestId];
        if (!q.exists) revert ServiceRequestNotFound(requestId);
    }

    function _service(uint64 serviceId) internal view returns (ServiceRecord storage s) {
        s = _services[serviceId];
        if (!s.exists) revert ServiceNotFound(serviceId);
    }

    function _blueprint(uint64 blueprintId) internal view returns (BlueprintRecord storage b) {
        b = _blueprints[blueprintId];
        if (!b.exists) revert BlueprintNotFound(blueprintId);
    }

    function _call(uint64 serviceId, uint64 callId) internal view returns (CallRecord storage c) {
        c = _calls[serviceId][callId];
        if (!c.exists) revert JobCallNotFound(serviceId, callId);
    }

    // ── manager calls ─────────────────────────────────────────────────────────────────────────

    /// requiresAggregation by staticcall; a failed or malformed answer means "true".
    function _askAggregation(address manager, uint64 serviceId, uint8 job) internal view returns (bool) {
        (bool ok, bytes memory ret) =
            manager.staticcall(abi.encodeCall(IBlueprintServiceManager.requiresAggregation, (serviceId, job)));
        if (!ok || ret.length < 32) return true;
        return abi.decode(ret, (uint256)) != 0;
    }

    /// getRequiredResultCount by staticcall; 1 when it fails, the operator count when it says 0.
    function _askRequiredCount(address manager, uint64 serviceId, uint8 job, uint32 operatorCount)
        internal
        view
        returns (uint32)
    {
        (bool ok, bytes memory ret) =
            manager.staticcall(abi.encodeCall(IBlueprintServiceManager.getRequiredResultCount, (serviceId, job)));
        if (!ok || ret.length < 32) return 1;
        uint256 n = abi.decode(ret, (uint256));
        if (n == 0) return operatorCount;
        // n <= type(uint32).max in this branch.
        // forge-lint: disable-next-line(unsafe-typecast)
        return n > type(uint32).max ? type(uint32).max : uint32(n);
    }

    /// Calls a best-effort hook with HOOK_GAS; a failure emits ManagerHookFailed and is ignored.
    /// Refuses to run with less gas than the hook is owed, so a low gas estimate cannot silently
    /// starve the hook (estimateGas would otherwise settle on a limit where the hook always fails).
    function _bestEffort(address manager, bytes memory data) internal {
        uint256 need = HOOK_GAS + HOOK_GAS / 63 + 10_000;
        if (gasleft() < need) revert InsufficientGasForHook(gasleft(), need);
        bool ok;
        uint256 retSize;
        assembly {
            ok := call(HOOK_GAS, manager, 0, add(data, 0x20), mload(data), 0, 0)
            retSize := returndatasize()
        }
        if (ok) return;
        uint256 copy = retSize > MAX_RETURN_COPY ? MAX_RETURN_COPY : retSize;
        bytes memory ret = new bytes(copy);
        assembly {
            returndatacopy(add(ret, 0x20), 0, copy)
        }
        bytes4 selector;
        assembly {
            selector := mload(add(data, 0x20))
        }
        emit ManagerHookFailed(manager, selector, ret);
    }
}
