// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangleTypes} from "./ITangleTypes.sol";

/// @title ITangle
/// @notice The subset of the Tangle (v2, tnt-core 0.19.x) core contract this project calls, with
///         the protocol's events and errors. Every selector, event topic and struct layout here
///         is the real router's (test/tangle-conformance.test.ts pins them against a table of
///         tnt-core 0.19 facts); LocalTangle implements exactly this interface and nothing else.
/// @dev Trap kept on purpose: the real core emits JobSubmitted with jobIndex NOT indexed (its
///      ITangleJobs interface declares it indexed; the topic hash is the same, the data is not).
interface ITangle is ITangleTypes {
    // ── events ────────────────────────────────────────────────────────────────────────────────

    event BlueprintCreated(
        uint64 indexed blueprintId, address indexed owner, address manager, string metadataUri, bytes32 metadataHash
    );
    event OperatorRegistered(uint64 indexed blueprintId, address indexed operator, bytes ecdsaPublicKey, string rpcAddress);
    event OperatorUnregistered(uint64 indexed blueprintId, address indexed operator);
    event OperatorPreferencesUpdated(
        uint64 indexed blueprintId, address indexed operator, bytes ecdsaPublicKey, string rpcAddress
    );
    event ServiceRequested(
        uint64 indexed requestId, uint64 indexed blueprintId, address indexed requester, ConfidentialityPolicy confidentiality
    );
    event ServiceApproved(uint64 indexed requestId, address indexed operator);
    event ServiceRejected(uint64 indexed requestId, address indexed operator);
    event ServiceActivated(
        uint64 indexed serviceId, uint64 indexed requestId, uint64 indexed blueprintId, ConfidentialityPolicy confidentiality
    );
    event ServiceTerminated(uint64 indexed serviceId);
    event JobSubmitted(uint64 indexed serviceId, uint64 indexed callId, uint8 jobIndex, address caller, bytes inputs);
    event JobResultSubmitted(uint64 indexed serviceId, uint64 indexed callId, address indexed operator, bytes output);
    event JobCompleted(uint64 indexed serviceId, uint64 indexed callId);
    /// A best-effort hook reverted or ran out of its gas cap; the protocol path went on.
    event ManagerHookFailed(address indexed manager, bytes4 indexed selector, bytes returnData);

    // ── errors (names and arguments as the protocol's Errors library) ──────────────────────────

    error Unauthorized();
    error InvalidState();
    error LengthMismatch();
    error BlueprintNotFound(uint64 blueprintId);
    error BlueprintNotActive(uint64 blueprintId);
    error BlueprintMetadataRequired();
    error BlueprintMetadataHashRequired();
    error BlueprintMembershipRequired();
    error BlueprintSourcesRequired();
    error BlueprintBinaryRequired();
    error BlueprintBinaryHashRequired();
    error OperatorNotRegistered(uint64 blueprintId, address operator);
    error OperatorRpcAddressRequired();
    error OperatorAlreadyRegistered(uint64 blueprintId, address operator);
    error InvalidOperatorKey();
    error DuplicateOperatorKey(uint64 blueprintId, bytes32 keyHash);
    error OperatorHasActiveServices(uint64 blueprintId, address operator);
    /// Registration's staking checks (Operators._registerOperator): not active in the staking
    /// contract, or its stake below the blueprint's minimum.
    error OperatorNotActive(address operator);
    error InsufficientStake(address operator, uint256 required, uint256 actual);
    error ServiceRequestNotFound(uint64 requestId);
    error ServiceRequestAlreadyProcessed(uint64 requestId);
    error ServiceRequestExpiredError(uint64 requestId);
    error ServiceNotFound(uint64 serviceId);
    error ServiceNotActive(uint64 serviceId);
    error ServiceExpired(uint64 serviceId);
    error NotServiceOwner(uint64 serviceId, address caller);
    error NotPermittedCaller(uint64 serviceId, address caller);
    error OperatorNotInService(uint64 serviceId, address operator);
    error AlreadyApproved(uint64 requestId, address operator);
    error InsufficientOperators(uint32 required, uint32 provided);
    error TooManyOperators(uint32 maximum, uint32 provided);
    error NoOperators();
    error TTLBelowMinimum(uint64 ttl, uint64 minimum);
    error TTLAboveMaximum(uint64 ttl, uint64 maximum);
    error JobCallNotFound(uint64 serviceId, uint64 callId);
    error JobAlreadyCompleted(uint64 serviceId, uint64 callId);
    error InvalidJobIndex(uint8 jobIndex);
    error ResultAlreadySubmitted(uint64 serviceId, uint64 callId, address operator);
    error InvalidMsgValue(uint256 expected, uint256 sent);
    error PaymentTooSmall(uint256 amount, uint256 minimumRequired);
    error UpfrontPaymentNotAllowedForEventDriven();
    error TokenNotAllowed(address token);
    error AggregationRequired(uint64 serviceId, uint8 jobIndex);
    /// A reverting hook (onBlueprintCreated, onRegister, onRequest, onJobCall) refused: `reason`
    /// is the manager's own revert data (decode it with the manager's ABI).
    error ManagerReverted(address manager, bytes reason);
    /// A reverting hook failed without return data (out of its gas cap, or a bare revert).
    error ManagerRejected(address manager);

    // ── blueprints ────────────────────────────────────────────────────────────────────────────

    function createBlueprint(BlueprintDefinition calldata definition) external returns (uint64 blueprintId);

    function getBlueprint(uint64 blueprintId) external view returns (Blueprint memory);

    function getBlueprintConfig(uint64 blueprintId) external view returns (BlueprintConfig memory);

    function blueprintCount() external view returns (uint64);

    /// The gas each manager hook gets (500,000 unless the deployment set another).
    function managerHookGasLimit() external view returns (uint256);

    // ── operators ─────────────────────────────────────────────────────────────────────────────

    /// Calls the manager's onRegister(operator, abi.encode(OperatorPreferences{key, rpcAddress})).
    function registerOperator(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress) external;

    /// Calls the manager's onRegister(operator, registrationInputs) (the preferences when empty).
    function registerOperator(
        uint64 blueprintId,
        bytes calldata ecdsaPublicKey,
        string calldata rpcAddress,
        bytes calldata registrationInputs
    ) external;

    function unregisterOperator(uint64 blueprintId) external;

    /// An empty key keeps the current one; the rpcAddress is required (it is not stored).
    function updateOperatorPreferences(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress)
        external;

    function isOperatorRegistered(uint64 blueprintId, address operator) external view returns (bool);

    function getOperatorPreferences(uint64 blueprintId, address operator)
        external
        view
        returns (OperatorPreferences memory);

    // ── services ──────────────────────────────────────────────────────────────────────────────

    function requestService(
        uint64 blueprintId,
        address[] calldata operators,
        bytes calldata config,
        address[] calldata permittedCallers,
        uint64 ttl,
        address paymentToken,
        uint256 paymentAmount,
        ConfidentialityPolicy confidentiality
    ) external payable returns (uint64 requestId);

    function approveService(ApprovalParams calldata params) external;

    function rejectService(uint64 requestId) external;

    function terminateService(uint64 serviceId) external;

    function addPermittedCaller(uint64 serviceId, address caller) external;

    function removePermittedCaller(uint64 serviceId, address caller) external;

    function getServiceRequest(uint64 requestId) external view returns (ServiceRequest memory);

    function getService(uint64 serviceId) external view returns (Service memory);

    function serviceCount() external view returns (uint64);

    function isServiceActive(uint64 serviceId) external view returns (bool);

    function isServiceOperator(uint64 serviceId, address operator) external view returns (bool);

    function getOperatorTotalActiveServices(address operator) external view returns (uint256 count);

    function getServiceOperators(uint64 serviceId) external view returns (address[] memory);

    function isPermittedCaller(uint64 serviceId, address caller) external view returns (bool);

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    function submitJob(uint64 serviceId, uint8 jobIndex, bytes calldata inputs)
        external
        payable
        returns (uint64 callId);

    function submitResult(uint64 serviceId, uint64 callId, bytes calldata output) external;

    function submitResults(uint64 serviceId, uint64[] calldata callIds, bytes[] calldata outputs) external;

    function getJobCall(uint64 serviceId, uint64 callId) external view returns (JobCall memory);
}
