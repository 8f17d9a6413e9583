// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";
import {IMultiAssetDelegation} from "./IMultiAssetDelegation.sol";
import {LocalTangleServices} from "./LocalTangleServices.sol";
import {LocalTangleState} from "./LocalTangleState.sol";

/// @title LocalTangle
/// @notice The devnet's and tests' stand-in for the Tangle core (tnt-core 0.19.x): the calls,
///         structs, events, errors, checks and manager-hook semantics of the real router for
///         everything this project touches, written from the protocol's sources (the facts are
///         pinned by test/tangle-conformance.test.ts). What it leaves out it refuses rather than
///         accepts, so it is never kinder than the real one:
///         - staking: registration checks the staking contract as the real core does (active,
///           stake >= the blueprint's minimum), and so do request, approve, reject and result
///           (isOperatorActive); LocalStaking's operators leave with startLeaving (no slashing);
///         - payments: native PayOnce payments stay in this contract (no distribution), an ERC20
///           payment token is refused (TokenNotAllowed), subscriptions are never billed;
///         - non-empty TLV schemas, BLS keys, TEE commitments and 130-byte key proofs are refused
///           (LocalUnsupported) instead of being validated;
///         - no master manager (MBSM) registry, RFQ, quotes, slashing, exits or binary versions.
contract LocalTangle is LocalTangleServices {
    constructor(IMultiAssetDelegation staking) LocalTangleState(staking) {}

    // ── blueprints ────────────────────────────────────────────────────────────────────────────

    /// @notice Creates a blueprint owned by the caller (ids count from 0), validated as the real
    ///         core validates a definition; the manager's onBlueprintCreated is a reverting hook.
    function createBlueprint(BlueprintDefinition calldata def) external returns (uint64 blueprintId) {
        _validateDefinition(def);
        blueprintId = _blueprintCount++;
        BlueprintRecord storage b = _blueprints[blueprintId];
        b.config = def.config;
        if (!def.hasConfig) {
            b.config.membership = MembershipModel.Fixed;
            b.config.pricing = PricingModel.PayOnce;
        }
        b.info = Blueprint({
            owner: msg.sender,
            manager: def.manager,
            createdAt: uint64(block.timestamp),
            membership: b.config.membership,
            pricing: b.config.pricing,
            active: true
        });
        // forge-lint: disable-next-line(unsafe-typecast)
        b.jobCount = def.jobs.length > 255 ? 255 : uint8(def.jobs.length);
        emit BlueprintCreated(blueprintId, msg.sender, def.manager, def.metadataUri, def.metadataHash);
        if (def.manager != address(0)) {
            _callManager(
                def.manager,
                abi.encodeCall(IBlueprintServiceManager.onBlueprintCreated, (blueprintId, msg.sender, address(this)))
            );
        }
    }

    function _validateDefinition(BlueprintDefinition calldata def) private pure {
        if (bytes(def.metadataUri).length == 0) revert BlueprintMetadataRequired();
        if (def.metadataHash == bytes32(0)) revert BlueprintMetadataHashRequired();
        if (def.jobs.length == 0) revert InvalidState();
        if (def.supportedMemberships.length == 0) revert BlueprintMembershipRequired();
        if (
            def.hasConfig && def.config.pricing == PricingModel.Subscription
                && (def.config.subscriptionRate == 0 || def.config.subscriptionInterval == 0)
        ) revert InvalidState();
        if (def.sources.length == 0) revert BlueprintSourcesRequired();
        for (uint256 i = 0; i < def.sources.length; i++) {
            BlueprintBinary[] calldata bins = def.sources[i].binaries;
            if (bins.length == 0) revert BlueprintBinaryRequired();
            for (uint256 j = 0; j < bins.length; j++) {
                if (bins[j].sha256 == bytes32(0)) revert BlueprintBinaryHashRequired();
            }
        }
        if (def.registrationSchema.length != 0 || def.requestSchema.length != 0) {
            revert LocalUnsupported("schema");
        }
        for (uint256 i = 0; i < def.jobs.length; i++) {
            if (def.jobs[i].paramsSchema.length != 0 || def.jobs[i].resultSchema.length != 0) {
                revert LocalUnsupported("schema");
            }
        }
    }

    /// Unknown ids answer a zero struct, as on the real router.
    function getBlueprint(uint64 blueprintId) external view returns (Blueprint memory) {
        return _blueprints[blueprintId].info;
    }

    function getBlueprintConfig(uint64 blueprintId) external view returns (BlueprintConfig memory) {
        return _blueprints[blueprintId].config;
    }

    // ── operators ─────────────────────────────────────────────────────────────────────────────

    function registerOperator(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress) external {
        _register(blueprintId, ecdsaPublicKey, rpcAddress, "");
    }

    function registerOperator(
        uint64 blueprintId,
        bytes calldata ecdsaPublicKey,
        string calldata rpcAddress,
        bytes calldata registrationInputs
    ) external {
        _register(blueprintId, ecdsaPublicKey, rpcAddress, registrationInputs);
    }

    function _register(uint64 blueprintId, bytes calldata key, string calldata rpc, bytes memory inputs) private {
        BlueprintRecord storage b = _blueprint(blueprintId);
        if (!b.info.active) revert BlueprintNotActive(blueprintId);
        if (!_staking.isOperatorActive(msg.sender)) revert OperatorNotActive(msg.sender);
        Registration storage r = _registrations[blueprintId][msg.sender];
        if (r.registeredAt != 0) revert OperatorAlreadyRegistered(blueprintId, msg.sender);
        bytes32 keyHash = _checkKey(key);
        if (_operatorKeys[blueprintId][keyHash] != address(0)) revert DuplicateOperatorKey(blueprintId, keyHash);
        _checkStake(b.info.manager);
        // rpcAddress is not stored (as on the real router): OperatorRegistered carries it.
        r.registeredAt = uint64(block.timestamp);
        r.ecdsaPublicKey = key;
        _operatorKeys[blueprintId][keyHash] = msg.sender;
        emit OperatorRegistered(blueprintId, msg.sender, key, rpc);
        address manager = b.info.manager;
        if (manager != address(0)) {
            bytes memory payload = inputs.length > 0 ? inputs : abi.encode(OperatorPreferences(key, rpc));
            _callManager(manager, abi.encodeCall(IBlueprintServiceManager.onRegister, (msg.sender, payload)));
        }
    }

    /// The staking contract's minimum, or the manager's own (getMinOperatorStake: used unless it
    /// answers useDefault or 0, or fails), as the real core reads it.
    function _checkStake(address manager) private view {
        uint256 minStake = _staking.minOperatorStake();
        (bool ok, bytes memory ret) =
            _tryStaticcallManager(manager, abi.encodeCall(IBlueprintServiceManager.getMinOperatorStake, ()), 64);
        if (ok) {
            (bool useDefault, uint256 customMin) = abi.decode(ret, (bool, uint256));
            if (!useDefault && customMin > 0) minStake = customMin;
        }
        if (!_staking.meetsStakeRequirement(msg.sender, minStake)) {
            revert InsufficientStake(msg.sender, minStake, _staking.getOperatorStake(msg.sender));
        }
    }

    /// The real router takes a 65-byte key (length only) or a 130-byte key+proof envelope.
    function _checkKey(bytes calldata key) private pure returns (bytes32) {
        if (key.length == 130) revert LocalUnsupported("key proof");
        if (key.length != 65) revert InvalidOperatorKey();
        return keccak256(key);
    }

    /// @notice Leaves a blueprint; refused while the operator serves an active service. The
    ///         manager's onUnregister is best-effort.
    function unregisterOperator(uint64 blueprintId) external {
        BlueprintRecord storage b = _blueprint(blueprintId);
        Registration storage r = _registrations[blueprintId][msg.sender];
        if (r.registeredAt == 0) revert OperatorNotRegistered(blueprintId, msg.sender);
        if (_activeServices[blueprintId][msg.sender] > 0) revert OperatorHasActiveServices(blueprintId, msg.sender);
        bytes32 keyHash = keccak256(r.ecdsaPublicKey);
        if (_operatorKeys[blueprintId][keyHash] == msg.sender) delete _operatorKeys[blueprintId][keyHash];
        delete _registrations[blueprintId][msg.sender];
        emit OperatorUnregistered(blueprintId, msg.sender);
        if (b.info.manager != address(0)) {
            _tryCallManager(b.info.manager, abi.encodeCall(IBlueprintServiceManager.onUnregister, (msg.sender)));
        }
    }

    function updateOperatorPreferences(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress)
        external
    {
        Registration storage r = _registrations[blueprintId][msg.sender];
        if (r.registeredAt == 0) revert OperatorNotRegistered(blueprintId, msg.sender);
        if (bytes(rpcAddress).length == 0) revert OperatorRpcAddressRequired();
        if (ecdsaPublicKey.length > 0) {
            bytes32 newHash = _checkKey(ecdsaPublicKey);
            address holder = _operatorKeys[blueprintId][newHash];
            if (holder != address(0) && holder != msg.sender) revert DuplicateOperatorKey(blueprintId, newHash);
            bytes32 oldHash = keccak256(r.ecdsaPublicKey);
            if (_operatorKeys[blueprintId][oldHash] == msg.sender) delete _operatorKeys[blueprintId][oldHash];
            _operatorKeys[blueprintId][newHash] = msg.sender;
            r.ecdsaPublicKey = ecdsaPublicKey;
        }
        emit OperatorPreferencesUpdated(blueprintId, msg.sender, r.ecdsaPublicKey, rpcAddress);
        address manager = _managerOf(blueprintId);
        if (manager != address(0)) {
            bytes memory prefs = abi.encode(OperatorPreferences(r.ecdsaPublicKey, rpcAddress));
            _tryCallManager(manager, abi.encodeCall(IBlueprintServiceManager.onUpdatePreferences, (msg.sender, prefs)));
        }
    }

    /// Active services `operator` serves across every blueprint (the staking contract's startLeaving asks).
    function getOperatorTotalActiveServices(address operator) external view returns (uint256 count) {
        for (uint64 i = 0; i < _blueprintCount; i++) {
            count += _activeServices[i][operator];
        }
    }

    function isOperatorRegistered(uint64 blueprintId, address operator) external view returns (bool) {
        return _registrations[blueprintId][operator].registeredAt != 0;
    }

    /// The key as registered and an empty rpcAddress (never stored); zero for an unknown operator.
    function getOperatorPreferences(uint64 blueprintId, address operator)
        external
        view
        returns (OperatorPreferences memory)
    {
        return OperatorPreferences(_registrations[blueprintId][operator].ecdsaPublicKey, "");
    }
}
