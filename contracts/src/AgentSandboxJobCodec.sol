// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BlueprintServiceManagerBase} from "./tangle/BlueprintServiceManagerBase.sol";

/// @title AgentSandboxJobCodec
/// @notice The blueprint's job encodings and their checks: the input structs, the mode flags,
///         and decoding of inputs accepted flat (`abi.encode(f1, f2, ...)`) or as one tuple
///         (`abi.encode(s)`), public so clients can check an encoding the same way.
abstract contract AgentSandboxJobCodec is BlueprintServiceManagerBase {
    uint8 internal constant JOB_SANDBOX_CREATE = 0;
    uint8 internal constant JOB_SANDBOX_DELETE = 1;
    uint8 internal constant JOB_WORKFLOW_CREATE = 2;
    uint8 internal constant JOB_WORKFLOW_TRIGGER = 3;
    uint8 internal constant JOB_WORKFLOW_CANCEL = 4;
    uint8 internal constant JOB_COUNT = 5;

    uint256 internal constant MAX_SANDBOX_ID_LENGTH = 255;

    /// Head size of the flat encodings (number of fields * 32): the first word of a flat
    /// encoding is the offset of its first (dynamic) field, while a tuple encoding starts with 0x20.
    uint256 internal constant CREATE_FLAT_HEAD = 18 * 32;
    uint256 internal constant WORKFLOW_FLAT_HEAD = 8 * 32;

    struct SandboxCreateRequest {
        string name;
        string image;
        string stack;
        string agent_identifier;
        string env_json;
        string metadata_json;
        bool ssh_enabled;
        string ssh_public_key;
        bool web_terminal_enabled;
        uint64 max_lifetime_seconds;
        uint64 idle_timeout_seconds;
        uint64 cpu_cores;
        uint64 memory_mb;
        uint64 disk_gb;
        bool tee_required;
        uint8 tee_type; // 0 none, 1 TDX, 2 Nitro, 3 SEV
        string attestation_nonce;
        string capabilities_json;
    }

    struct WorkflowCreateRequest {
        string name;
        string workflow_json;
        string trigger_type;
        string trigger_config;
        string sandbox_config_json;
        uint8 target_kind; // 0 sandbox, 1 instance
        string target_sandbox_id;
        uint64 target_service_id; // 0 = this service
    }

    bool public immutable instanceMode;
    bool public immutable teeRequired;

    error InvalidModeFlags();
    error UnknownJob(uint8 job);
    error InvalidJobInputs(uint8 job);
    error InvalidSandboxId();
    error InvalidTeeType(uint8 teeType);
    error TeeRequired();
    error WorkflowNameRequired();
    error InvalidWorkflowTarget(uint8 targetKind, uint256 targetSandboxIdLength);

    constructor(bool _instanceMode, bool _teeRequired) {
        if (_teeRequired && !_instanceMode) revert InvalidModeFlags();
        instanceMode = _instanceMode;
        teeRequired = _teeRequired;
    }

    function _bubble(bytes memory reason) internal pure {
        assembly {
            revert(add(reason, 0x20), mload(reason))
        }
    }

    // ── input/output decoding (public so clients can check an encoding the same way) ──────────

    /// Decodes and validates a job's inputs as onJobCall will (not the mode's job restrictions
    /// nor chain state: unknown sandboxes/workflows are checked in onJobCall). Reverts with the
    /// reason, or with empty data when the ABI data itself is malformed.
    function checkJobInputs(uint8 job, bytes calldata inputs) external view {
        if (job == JOB_SANDBOX_CREATE) {
            SandboxCreateRequest memory r =
                abi.decode(_asTuple(inputs, CREATE_FLAT_HEAD, job), (SandboxCreateRequest));
            if (r.tee_type > 3 || (r.tee_required && r.tee_type == 0)) revert InvalidTeeType(r.tee_type);
            if (teeRequired && !r.tee_required) revert TeeRequired();
        } else if (job == JOB_SANDBOX_DELETE) {
            uint256 n = bytes(_decodeSandboxId(inputs)).length;
            if (n == 0 || n > MAX_SANDBOX_ID_LENGTH) revert InvalidSandboxId();
        } else if (job == JOB_WORKFLOW_CREATE) {
            WorkflowCreateRequest memory r =
                abi.decode(_asTuple(inputs, WORKFLOW_FLAT_HEAD, job), (WorkflowCreateRequest));
            if (bytes(r.name).length == 0) revert WorkflowNameRequired();
            uint256 n = bytes(r.target_sandbox_id).length;
            bool ok = instanceMode ? (r.target_kind == 1 && n == 0) : (r.target_kind == 0 && n != 0 && n <= MAX_SANDBOX_ID_LENGTH);
            if (!ok) revert InvalidWorkflowTarget(r.target_kind, n);
        } else if (job < JOB_COUNT) {
            // (uint64 workflow_id): flat and tuple encodings are the same 32 bytes.
            if (inputs.length != 32) revert InvalidJobInputs(job);
            abi.decode(inputs, (uint64));
        } else {
            revert UnknownJob(job);
        }
    }

    /// `(string sandbox_id)` flat, or wrapped in a one-field tuple (an extra leading 0x20).
    function _decodeSandboxId(bytes calldata data) internal pure returns (string memory) {
        if (data.length >= 96 && _word(data, 0) == 0x20 && _word(data, 32) == 0x20) {
            uint256 len = _word(data, 64);
            // rounds len up to a 32-byte multiple on purpose.
            // forge-lint: disable-next-line(divide-before-multiply)
            if (len <= data.length && data.length == 96 + ((len + 31) / 32) * 32) {
                return abi.decode(data[32:], (string));
            }
        }
        return abi.decode(data, (string));
    }

    /// Create output `(string sandboxId, string json)`, flat (first word 0x40) or as one tuple.
    function decodeCreateOutput(bytes calldata data) external pure returns (string memory sandboxId, string memory json) {
        if (data.length >= 32 && _word(data, 0) == 0x20) return abi.decode(data[32:], (string, string));
        return abi.decode(data, (string, string));
    }

    function _asTuple(bytes calldata data, uint256 flatHead, uint8 job) internal pure returns (bytes memory) {
        if (data.length < 32) revert InvalidJobInputs(job);
        uint256 first = _word(data, 0);
        if (first == 0x20) return data;
        if (first == flatHead) return bytes.concat(bytes32(uint256(0x20)), data);
        revert InvalidJobInputs(job);
    }

    function _word(bytes calldata data, uint256 pos) private pure returns (uint256) {
        return uint256(bytes32(data[pos:pos + 32]));
    }
}
