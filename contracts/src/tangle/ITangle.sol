// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title ITangle
/// @notice The subset of the Tangle (v2, tnt-core 0.19.x) core contract this project calls, with
///         the protocol's events and errors. Selectors and event topics match the real protocol
///         (checked by contracts/test/Selectors.t.sol).
/// @dev Trap kept on purpose: the real contract emits JobSubmitted with jobIndex NOT indexed.
interface ITangle {
    // ── types (ABI-identical to the protocol's; enums are uint8 on the wire) ────────────────────

    struct Asset {
        uint8 kind; // 0 native, 1 ERC20
        address token;
    }

    struct AssetSecurityCommitment {
        Asset asset;
        uint16 exposureBps;
    }

    struct TeeAttestationCommitment {
        uint8 backend;
        bytes32 expectedMeasurement;
        bytes32 nonceBinding;
        uint64 expiresAt;
    }

    /// approveService's single argument; a minimal approval is `requestId` with empty/zero fields.
    struct ApprovalParams {
        uint64 requestId;
        AssetSecurityCommitment[] securityCommitments;
        uint256[4] blsPubkey;
        uint256[2] blsPopSignature;
        TeeAttestationCommitment[] teeCommitments;
    }

    /// getJobCall's answer, in the field order of tnt-core 0.19.
    struct JobCall {
        uint8 jobIndex;
        address caller;
        uint64 createdAt;
        uint32 resultCount;
        bool completed;
        bool isRFQ;
        uint256 payment;
    }

    /// getService's answer (status: 0 pending, 1 active, 2 terminated).
    struct Service {
        uint64 blueprintId;
        address owner;
        uint64 createdAt;
        uint64 ttl;
        uint64 terminatedAt;
        uint64 lastPaymentAt;
        uint32 operatorCount;
        uint32 minOperators;
        uint32 maxOperators;
        uint8 membership;
        uint8 pricing;
        uint8 status;
        uint8 confidentiality;
    }

    // ── events ────────────────────────────────────────────────────────────────────────────────

    event BlueprintCreated(
        uint64 indexed blueprintId, address indexed owner, address manager, string metadataUri, bytes32 metadataHash
    );
    event OperatorRegistered(uint64 indexed blueprintId, address indexed operator, bytes ecdsaPublicKey, string rpcAddress);
    event OperatorUnregistered(uint64 indexed blueprintId, address indexed operator);
    event ServiceRequested(uint64 indexed requestId, uint64 indexed blueprintId, address indexed requester, uint8 confidentiality);
    event ServiceApproved(uint64 indexed requestId, address indexed operator);
    event ServiceRejected(uint64 indexed requestId, address indexed operator);
    event ServiceActivated(uint64 indexed serviceId, uint64 indexed requestId, uint64 indexed blueprintId, uint8 confidentiality);
    event ServiceTerminated(uint64 indexed serviceId);
    event JobSubmitted(uint64 indexed serviceId, uint64 indexed callId, uint8 jobIndex, address caller, bytes inputs);
    event JobResultSubmitted(uint64 indexed serviceId, uint64 indexed callId, address indexed operator, bytes output);
    event JobCompleted(uint64 indexed serviceId, uint64 indexed callId);
    event ManagerHookFailed(address indexed manager, bytes4 indexed selector, bytes returnData);

    // ── errors (names and arguments as the protocol's, so clients decode both alike) ───────────

    error BlueprintNotFound(uint64 blueprintId);
    error OperatorNotRegistered(uint64 blueprintId, address operator);
    error OperatorAlreadyRegistered(uint64 blueprintId, address operator);
    error OperatorHasActiveServices(uint64 blueprintId, address operator);
    error InvalidOperatorKey();
    error ServiceRequestNotFound(uint64 requestId);
    error ServiceRequestAlreadyProcessed(uint64 requestId);
    error AlreadyApproved(uint64 requestId, address operator);
    error NoOperators();
    error DuplicateOperator(address operator);
    error ServiceNotFound(uint64 serviceId);
    error ServiceNotActive(uint64 serviceId);
    error NotServiceOwner(uint64 serviceId, address caller);
    error NotPermittedCaller(uint64 serviceId, address caller);
    error OperatorNotInService(uint64 serviceId, address operator);
    error JobCallNotFound(uint64 serviceId, uint64 callId);
    error JobAlreadyCompleted(uint64 serviceId, uint64 callId);
    error ResultAlreadySubmitted(uint64 serviceId, uint64 callId, address operator);
    error AggregationRequired(uint64 serviceId, uint8 jobIndex);
    error LengthMismatch();
    error InvalidMsgValue(uint256 expected, uint256 sent);
    error TokenNotAllowed(address token);
    error InvalidConfidentiality(uint8 confidentiality);
    error InsufficientGasForHook(uint256 available, uint256 required);

    // ── blueprints and operators ──────────────────────────────────────────────────────────────

    /// LocalTangle's minimal form (the real one takes a full BlueprintDefinition).
    function createBlueprint(string calldata metadataUri, address manager) external returns (uint64 blueprintId);

    /// Calls BSM onRegister(operator, abi.encode(OperatorPreferences{ecdsaPublicKey, rpcAddress})).
    function registerOperator(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress)
        external
        payable;

    /// Calls BSM onRegister(operator, registrationInputs).
    function registerOperator(
        uint64 blueprintId,
        bytes calldata ecdsaPublicKey,
        string calldata rpcAddress,
        bytes calldata registrationInputs
    ) external payable;

    function isOperatorRegistered(uint64 blueprintId, address operator) external view returns (bool);

    // ── services ──────────────────────────────────────────────────────────────────────────────

    function requestService(
        uint64 blueprintId,
        address[] calldata operators,
        bytes calldata config,
        address[] calldata permittedCallers,
        uint64 ttl,
        address paymentToken,
        uint256 paymentAmount,
        uint8 confidentiality
    ) external payable returns (uint64 requestId);

    function approveService(ApprovalParams calldata params) external;

    function getService(uint64 serviceId) external view returns (Service memory);

    function isServiceActive(uint64 serviceId) external view returns (bool);

    function isServiceOperator(uint64 serviceId, address operator) external view returns (bool);

    function getServiceOperators(uint64 serviceId) external view returns (address[] memory);

    function isPermittedCaller(uint64 serviceId, address caller) external view returns (bool);

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    function submitJob(uint64 serviceId, uint8 jobIndex, bytes calldata inputs)
        external
        payable
        returns (uint64 callId);

    function submitResult(uint64 serviceId, uint64 callId, bytes calldata result) external;

    function submitResults(uint64 serviceId, uint64[] calldata callIds, bytes[] calldata results) external;

    function getJobCall(uint64 serviceId, uint64 callId) external view returns (JobCall memory);
}
