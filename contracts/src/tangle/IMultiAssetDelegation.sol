// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title IMultiAssetDelegation
/// @notice The operator side of Tangle's staking contract (tnt-core 0.19.x, commit 8a2b24c:
///         IMultiAssetDelegation, OperatorManager, DelegationErrors) that the `stake` tool calls.
///         Tangle's registerOperator for a blueprint requires `isOperatorActive` here and a stake
///         of at least `minOperatorStake` (or the blueprint manager's own minimum).
interface IMultiAssetDelegation {
    event OperatorRegistered(address indexed operator, uint256 stake);
    event OperatorStakeIncreased(address indexed operator, uint256 amount);
    event OperatorLeavingScheduled(address indexed operator, uint64 readyRound);

    error OperatorAlreadyRegistered(address operator);
    error OperatorNotRegistered(address operator);
    error OperatorBondTokenOnly(address requiredToken);
    error AssetNotEnabled(address token);
    error InsufficientStake(uint256 required, uint256 provided);
    error OperatorNotActive(address operator);
    error ZeroAmount();
    error OperatorHasActiveServices(address operator);
    error ActiveServiceCheckUnavailable(address operator);
    error AccessControlUnauthorizedAccount(address account, bytes32 neededRole);

    // A bond-token stake (registerOperatorWithAsset / increaseStakeWithAsset) moves the token with
    // SafeERC20.safeTransferFrom, so the token's own errors reach the caller: OpenZeppelin 5's
    // ERC-6093 errors (tnt-core 8a2b24c's LocalTestnet bonds in TNT, an OpenZeppelin 5.1 ERC20).
    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error SafeERC20FailedOperation(address token);

    /// Becomes an operator with a native self-stake of msg.value (refused when a bond token is set).
    function registerOperator() external payable;

    /// Becomes an operator with `amount` of the bond token (approve it first).
    function registerOperatorWithAsset(address token, uint256 amount) external;

    function increaseStake() external payable;

    function increaseStakeWithAsset(address token, uint256 amount) external;

    /// Stops being active at once (refused while the operator serves an active service).
    function startLeaving() external;

    function isOperator(address operator) external view returns (bool);

    function isOperatorActive(address operator) external view returns (bool);

    function getOperatorStake(address operator) external view returns (uint256);

    function getOperatorSelfStake(address operator) external view returns (uint256);

    function minOperatorStake() external view returns (uint256);

    /// The operator's total stake (self + delegated) is at least `required` (Tangle's registration check).
    function meetsStakeRequirement(address operator, uint256 required) external view returns (bool);

    function operatorBondToken() external view returns (address);
}
