// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IMultiAssetDelegation} from "./IMultiAssetDelegation.sol";

/// @title LocalStaking
/// @notice The devnet's stand-in for Tangle's MultiAssetDelegation, operator side only: a native
///         self-stake of at least `minOperatorStake` makes an operator active, as in tnt-core 0.19.
///         Absent by design: ERC20 bonds (operatorBondToken is zero), delegation, unstaking,
///         slashing, rounds. The stake is kept here.
contract LocalStaking is IMultiAssetDelegation {
    uint256 public immutable minOperatorStake;
    mapping(address => uint256) private _stake;

    constructor(uint256 minStake) {
        minOperatorStake = minStake;
    }

    function registerOperator() external payable {
        if (_stake[msg.sender] > 0) revert OperatorAlreadyRegistered(msg.sender);
        if (msg.value < minOperatorStake || msg.value == 0) revert InsufficientStake(minOperatorStake, msg.value);
        _stake[msg.sender] = msg.value;
        emit OperatorRegistered(msg.sender, msg.value);
    }

    function registerOperatorWithAsset(address, uint256) external pure {
        revert OperatorBondTokenOnly(address(0));
    }

    function increaseStake() external payable {
        if (_stake[msg.sender] == 0) revert OperatorNotRegistered(msg.sender);
        _stake[msg.sender] += msg.value;
        emit OperatorStakeIncreased(msg.sender, msg.value);
    }

    function increaseStakeWithAsset(address, uint256) external pure {
        revert OperatorBondTokenOnly(address(0));
    }

    function isOperator(address operator) external view returns (bool) {
        return _stake[operator] > 0;
    }

    function isOperatorActive(address operator) external view returns (bool) {
        return _stake[operator] > 0;
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

    function operatorBondToken() external pure returns (address) {
        return address(0);
    }
}
