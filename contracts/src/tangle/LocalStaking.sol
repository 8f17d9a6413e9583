// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IMultiAssetDelegation} from "./IMultiAssetDelegation.sol";

/// @title LocalStaking
/// @notice The devnet's stand-in for Tangle's MultiAssetDelegation, operator side only, as in
///         tnt-core 0.19 (8a2b24c OperatorManager): a self-stake of at least `minOperatorStake`,
///         native or — when `operatorBondToken` is set, as the real LocalTestnet sets TNT — in that
///         ERC20 only (moved with SafeERC20's transferFrom, so the token's own errors reach the
///         caller), makes an operator active; `startLeaving` makes it inactive at once and is
///         refused while the Tangle core counts an active service of it (fail-closed).
///         Absent by design: completing the exit (there are no rounds, so the stake stays),
///         unstaking, delegation, slashing.
contract LocalStaking is IMultiAssetDelegation {
    bytes32 public constant ADMIN_ROLE = keccak256("ADMIN_ROLE");

    enum Status {
        None,
        Active,
        Leaving
    }

    uint256 public immutable minOperatorStake;
    /// Zero: native stake only; else the only asset an operator may bond.
    address public immutable operatorBondToken;
    address private immutable _admin;
    /// The Tangle core startLeaving asks for active services (none set: nothing to consult).
    address private _tangleCore;
    mapping(address => uint256) private _stake;
    mapping(address => Status) private _status;

    constructor(uint256 minStake, address bondToken) {
        minOperatorStake = minStake;
        operatorBondToken = bondToken;
        _admin = msg.sender;
    }

    /// The admin wires the core (StakingAdminFacet.setTangle).
    function setTangle(address tangle) external {
        if (msg.sender != _admin) revert AccessControlUnauthorizedAccount(msg.sender, ADMIN_ROLE);
        _tangleCore = tangle;
    }

    function registerOperator() external payable {
        if (operatorBondToken != address(0)) revert OperatorBondTokenOnly(operatorBondToken);
        if (_status[msg.sender] != Status.None) revert OperatorAlreadyRegistered(msg.sender);
        if (msg.value < minOperatorStake) revert InsufficientStake(minOperatorStake, msg.value);
        _activate(msg.value);
    }

    function registerOperatorWithAsset(address token, uint256 amount) external {
        if (_status[msg.sender] != Status.None) revert OperatorAlreadyRegistered(msg.sender);
        if (operatorBondToken == address(0) || token != operatorBondToken) {
            revert OperatorBondTokenOnly(operatorBondToken);
        }
        if (amount < minOperatorStake) revert InsufficientStake(minOperatorStake, amount);
        _pull(token, amount);
        _activate(amount);
    }

    function increaseStake() external payable {
        if (operatorBondToken != address(0)) revert OperatorBondTokenOnly(operatorBondToken);
        if (_status[msg.sender] != Status.Active) revert OperatorNotActive(msg.sender);
        if (msg.value == 0) revert ZeroAmount();
        _stake[msg.sender] += msg.value;
        emit OperatorStakeIncreased(msg.sender, msg.value);
    }

    function increaseStakeWithAsset(address token, uint256 amount) external {
        if (operatorBondToken == address(0) || token != operatorBondToken) {
            revert OperatorBondTokenOnly(operatorBondToken);
        }
        if (_status[msg.sender] != Status.Active) revert OperatorNotActive(msg.sender);
        if (amount == 0) revert ZeroAmount();
        _pull(token, amount);
        _stake[msg.sender] += amount;
        emit OperatorStakeIncreased(msg.sender, amount);
    }

    /// Inactive from now on; refused while the core counts an active service of the operator.
    function startLeaving() external {
        if (_status[msg.sender] != Status.Active) revert OperatorNotActive(msg.sender);
        if (_tangleCore.code.length > 0) {
            (bool ok, bytes memory data) = _tangleCore.staticcall(
                abi.encodeWithSignature("getOperatorTotalActiveServices(address)", msg.sender)
            );
            if (!ok || data.length < 32) revert ActiveServiceCheckUnavailable(msg.sender);
            if (abi.decode(data, (uint256)) > 0) revert OperatorHasActiveServices(msg.sender);
        }
        _status[msg.sender] = Status.Leaving;
        // No rounds here: the exit never completes (readyRound: never).
        emit OperatorLeavingScheduled(msg.sender, type(uint64).max);
    }

    function isOperator(address operator) external view returns (bool) {
        return _status[operator] != Status.None;
    }

    function isOperatorActive(address operator) external view returns (bool) {
        return _status[operator] == Status.Active;
    }

    function getOperatorStake(address operator) external view returns (uint256) {
        return _stake[operator];
    }

    function getOperatorSelfStake(address operator) external view returns (uint256) {
        return _stake[operator];
    }

    /// Only self-stake exists here (no delegation), so the total is the self-stake.
    function meetsStakeRequirement(address operator, uint256 required) external view returns (bool) {
        return _stake[operator] >= required;
    }

    function _activate(uint256 amount) private {
        _stake[msg.sender] = amount;
        _status[msg.sender] = Status.Active;
        emit OperatorRegistered(msg.sender, amount);
    }

    /// SafeERC20.safeTransferFrom: the token's revert as it is; `false` or no code is a failure.
    function _pull(address token, uint256 amount) private {
        (bool ok, bytes memory ret) =
            token.call(abi.encodeWithSignature("transferFrom(address,address,uint256)", msg.sender, address(this), amount));
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length == 0 ? token.code.length == 0 : !abi.decode(ret, (bool))) revert SafeERC20FailedOperation(token);
    }
}
