// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title ITangleLifecycle
/// @notice Errors of the Tangle core (tnt-core 0.19.x, commit 8a2b24c: Errors.sol, Operators.sol)
///         that the role tools may meet on a real deployment and ITangle does not list (the
///         stand-in has no schemas or key proofs): so a refusal is shown by name. Also
///         the request-expiry window view the operator's `requests list` reads.
interface ITangleLifecycle {
    error SchemaValidationFailed(uint8 target, uint64 refId, uint64 auxId, uint256 path);
    error KeyOwnershipProofRequired(uint64 blueprintId);
    error InvalidKeyOwnershipProof(uint64 blueprintId, address expected, address recovered);
    error MaxBlueprintsPerOperatorExceeded(address operator, uint32 maxAllowed);
    error MBSMRegistryNotSet();
    error MasterManagerUnavailable();
    error SecurityCommitmentsRequired(uint64 requestId);
    error InsufficientPayment(uint256 required, uint256 sent);

    /// How long a request may wait for approvals (the protocol's default is one hour).
    function requestExpiryGracePeriod() external view returns (uint64);

    function serviceRequestCount() external view returns (uint64);
}
