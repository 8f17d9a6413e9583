// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title ITangleTypes
/// @notice The structs and enums of the Tangle (v2, tnt-core 0.19.x) calls this project makes,
///         with the protocol's field order and widths, so every selector built from them and every
///         ABI value decoded with them is the real protocol's (checked by
///         test/tangle-conformance.test.ts against a table of tnt-core 0.19 facts). Enums are
///         uint8 on the wire; an out-of-range value fails decoding, as on the real router.
interface ITangleTypes {
    enum MembershipModel {
        Fixed,
        Dynamic
    }

    enum PricingModel {
        PayOnce,
        Subscription,
        EventDriven
    }

    enum ServiceStatus {
        Pending,
        Active,
        Terminated
    }

    /// Any 0, TeeRequired 1, StandardRequired 2, TeePreferred 3.
    enum ConfidentialityPolicy {
        Any,
        TeeRequired,
        StandardRequired,
        TeePreferred
    }

    enum AssetKind {
        Native,
        ERC20
    }

    enum TeeBackend {
        Unset,
        Phala,
        AwsNitro,
        GcpConfidential,
        AzureSkr,
        DirectTdx
    }

    enum BlueprintSourceKind {
        Container,
        Wasm,
        Native
    }

    enum BlueprintFetcherKind {
        None,
        Ipfs,
        Http,
        Github
    }

    enum WasmRuntime {
        Unknown,
        Wasmtime,
        Wasmer
    }

    enum BlueprintArchitecture {
        Wasm32,
        Wasm64,
        Wasi32,
        Wasi64,
        Amd32,
        Amd64,
        Arm32,
        Arm64,
        RiscV32,
        RiscV64
    }

    enum BlueprintOperatingSystem {
        Unknown,
        Linux,
        Windows,
        MacOS,
        BSD
    }

    // ── blueprints ────────────────────────────────────────────────────────────────────────────

    /// getBlueprint's answer: a static struct (no metadata in it; that is blueprintMetadata's).
    struct Blueprint {
        address owner;
        address manager;
        uint64 createdAt;
        MembershipModel membership;
        PricingModel pricing;
        bool active;
    }

    struct BlueprintConfig {
        MembershipModel membership;
        PricingModel pricing;
        uint32 minOperators;
        uint32 maxOperators; // 0 = the protocol's ceiling
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

    /// Empty schemas mean "not validated"; a non-empty one is a TLV schema (SchemaLib's format)
    /// the protocol checks each payload against.
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
        WasmRuntime runtime;
        BlueprintFetcherKind fetcher;
        string artifactUri;
        string entrypoint;
    }

    struct NativeSource {
        BlueprintFetcherKind fetcher;
        string artifactUri;
        string entrypoint;
    }

    struct TestingSource {
        string cargoPackage;
        string cargoBin;
        string basePath;
    }

    struct BlueprintBinary {
        BlueprintArchitecture arch;
        BlueprintOperatingSystem os;
        string name;
        bytes32 sha256;
    }

    struct BlueprintSource {
        BlueprintSourceKind kind;
        ImageRegistrySource container;
        WasmSource wasm;
        NativeSource native;
        TestingSource testing;
        BlueprintBinary[] binaries;
    }

    /// createBlueprint's single argument.
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
        MembershipModel[] supportedMemberships;
    }

    // ── operators ─────────────────────────────────────────────────────────────────────────────

    /// getOperatorPreferences' answer. The real protocol never stores rpcAddress (it is always
    /// empty here): read it from OperatorRegistered / OperatorPreferencesUpdated.
    struct OperatorPreferences {
        bytes ecdsaPublicKey;
        string rpcAddress;
    }

    // ── services ──────────────────────────────────────────────────────────────────────────────

    struct Asset {
        AssetKind kind;
        address token;
    }

    struct AssetSecurityCommitment {
        Asset asset;
        uint16 exposureBps;
    }

    struct TeeAttestationCommitment {
        TeeBackend backend;
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

    /// getServiceRequest's answer.
    struct ServiceRequest {
        uint64 blueprintId;
        address requester;
        uint64 createdAt;
        uint64 ttl;
        uint32 operatorCount;
        uint32 approvalCount;
        address paymentToken;
        uint256 paymentAmount;
        MembershipModel membership;
        uint32 minOperators;
        uint32 maxOperators;
        bool rejected;
        ConfidentialityPolicy confidentiality;
        bool activated;
    }

    /// getService's answer.
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
        MembershipModel membership;
        PricingModel pricing;
        ServiceStatus status;
        ConfidentialityPolicy confidentiality;
    }

    /// getJobCall's answer.
    struct JobCall {
        uint8 jobIndex;
        address caller;
        uint64 createdAt;
        uint32 resultCount;
        bool completed;
        bool isRFQ;
        uint256 payment;
    }
}
