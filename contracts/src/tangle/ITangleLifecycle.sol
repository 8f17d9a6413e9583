// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title ITangleLifecycle
/// @notice The calls of the Tangle core contract (tnt-core 0.19.x, commit 8a2b24c) that the role
///         tools use beyond ITangle: a blueprint created from its full definition, the service
///         request as stored, rejecting and terminating, leaving a blueprint. Written from the
///         protocol's interface (ITangleBlueprints / ITangleServices / ITangleOperators, Types):
///         enums are uint8 on the wire, so selectors and layouts are the protocol's.
interface ITangleLifecycle {
    struct BlueprintConfig {
        uint8 membership; // 0 fixed, 1 dynamic
        uint8 pricing; // 0 pay once, 1 subscription, 2 event driven
        uint32 minOperators;
        uint32 maxOperators;
        uint256 subscriptionRate;
        uint64 subscriptionInterval;
        uint256 eventRate;
    }

    struct BlueprintMetadata {
        string name;
        string description;
        string author;
        string category;
        string codeRepository;
        string logo;
        string website;
        string license;
        string profilingData;
    }

    struct JobDefinition {
        string name;
        string description;
        string metadataUri;
        bytes paramsSchema;
        bytes resultSchema;
    }

    struct ImageRegistrySource {
        string registry;
        string image;
        string tag;
    }

    struct WasmSource {
        uint8 runtime;
        uint8 fetcher;
        string artifactUri;
        string entrypoint;
    }

    struct NativeSource {
        uint8 fetcher;
        string artifactUri;
        string entrypoint;
    }

    struct TestingSource {
        string cargoPackage;
        string cargoBin;
        string basePath;
    }

    struct BlueprintBinary {
        uint8 arch;
        uint8 os;
        string name;
        bytes32 sha256;
    }

    struct BlueprintSource {
        uint8 kind; // 0 container, 1 wasm, 2 native
        ImageRegistrySource container;
        WasmSource wasm;
        NativeSource native;
        TestingSource testing;
        BlueprintBinary[] binaries;
    }

    struct BlueprintDefinition {
        string metadataUri;
        bytes32 metadataHash;
        address manager;
        uint32 masterManagerRevision;
        bool hasConfig;
        BlueprintConfig config;
        BlueprintMetadata metadata;
        JobDefinition[] jobs;
        bytes registrationSchema;
        bytes requestSchema;
        BlueprintSource[] sources;
        uint8[] supportedMemberships;
    }

    /// getServiceRequest's answer, in the protocol's field order (the operators are not in it:
    /// they are read from the requestService call itself).
    struct ServiceRequest {
        uint64 blueprintId;
        address requester;
        uint64 createdAt;
        uint64 ttl;
        uint32 operatorCount;
        uint32 approvalCount;
        address paymentToken;
        uint256 paymentAmount;
        uint8 membership;
        uint32 minOperators;
        uint32 maxOperators;
        bool rejected;
        uint8 confidentiality;
        bool activated;
    }

    error OperatorNotActive(address operator);
    error InsufficientStake(address operator, uint256 required, uint256 actual);
    error BlueprintNotActive(uint64 blueprintId);
    error ManagerReverted(address manager, bytes reason);
    error Unauthorized();
    error SchemaValidationFailed(uint8 target, uint64 refId, uint64 auxId, uint256 path);
    error ServiceRequestExpired(uint64 requestId);
    error TTLBelowMinimum(uint64 ttl, uint64 minimum);
    error TTLAboveMaximum(uint64 ttl, uint64 maximum);
    error BlueprintMetadataRequired();
    error BlueprintSourcesRequired();
    error BlueprintMembershipRequired();
    error BlueprintBinaryRequired();
    error BlueprintBinaryHashRequired();
    error BlueprintMetadataHashRequired();
    error KeyOwnershipProofRequired(uint64 blueprintId);
    error DuplicateOperatorKey(uint64 blueprintId, bytes32 keyHash);

    function createBlueprint(BlueprintDefinition calldata definition) external returns (uint64 blueprintId);

    function blueprintCount() external view returns (uint64);

    function unregisterOperator(uint64 blueprintId) external;

    function serviceRequestCount() external view returns (uint64);

    function getServiceRequest(uint64 requestId) external view returns (ServiceRequest memory);

    function rejectService(uint64 requestId) external;

    function terminateService(uint64 serviceId) external;

    function serviceCount() external view returns (uint64);
}
