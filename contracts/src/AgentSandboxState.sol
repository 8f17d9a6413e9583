// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {AgentSandboxInstances} from "./AgentSandboxInstances.sol";

/// @title AgentSandboxState
/// @notice The blueprint's records (sandboxes, operator slots, pending calls, workflows) and the
///         read-only views and job prices over them; AgentSandboxBlueprint declares the events and
///         errors and holds the hooks and jobs that change the records. Split out only to keep each
///         file readable: one deployed contract, the same storage order and ABI.
abstract contract AgentSandboxState is AgentSandboxInstances {
    // ── jobs and pricing ──────────────────────────────────────────────────────────────────────

    uint32 internal constant INITIAL_DEFAULT_CAPACITY = 100;
    uint64 internal constant INITIAL_RESERVATION_TIMEOUT = 1 hours;

    struct Workflow {
        string name;
        string workflow_json;
        string trigger_type;
        string trigger_config;
        string sandbox_config_json;
        uint8 target_kind;
        string target_sandbox_id;
        uint64 target_service_id;
        bool active;
        uint64 created_at; // 0 while the create job awaits its result
        uint64 updated_at;
        uint64 last_triggered_at;
        uint64 service_id;
        address owner;
    }

    struct Sandbox {
        address operator;
        address owner;
        uint64 serviceId;
        uint64 createdAt;
        bool active;
        /// Stopped for good by its operator (reportSandboxGone): slot freed; a delete is a no-op.
        bool gone;
    }

    /// One storage word per operator. `known` (set at registration) keeps the word non-zero, so
    /// bumping `reserved` costs the same gas whichever operator the random pick lands on.
    struct OperatorSlots {
        uint32 capacity; // 0 = follow defaultCapacity
        uint32 active;
        uint32 reserved;
        bool known;
    }

    /// What onJobCall keeps for onJobResult (which only gets the inputs' hash).
    struct PendingCall {
        bytes32 inputsHash;
        address operator; // the chosen one: assigned (create), routed (delete), holder (workflow); 0 = any
        uint64 calledAt; // when the call was made (reservation expiry)
        uint8 job;
        bool open;
        address caller;
        uint64 workflowId; // trigger/cancel: the workflow
        bytes32 sandboxHash; // delete: the sandbox
    }

    // ── state ─────────────────────────────────────────────────────────────────────────────────

    uint32 public defaultCapacity = INITIAL_DEFAULT_CAPACITY;
    /// After this long a create's reservation may be released by anyone (releaseReservation).
    uint64 public reservationTimeout = INITIAL_RESERVATION_TIMEOUT;
    /// Capacity, sandboxes held (active) and slots reserved by creates awaiting their result.
    mapping(address => OperatorSlots) internal _slots;
    mapping(uint64 => mapping(address => uint32)) internal serviceOperatorActive;
    /// Terminated services: their sandboxes' slots were freed at termination.
    mapping(uint64 => bool) public serviceEnded;
    uint256 public totalActiveSandboxes;
    address[] internal _operators;
    mapping(address => uint256) internal _operatorIndex; // index + 1

    mapping(bytes32 => Sandbox) internal _sandboxes;
    mapping(uint256 => PendingCall) internal _pending;
    uint256 internal _assignNonce;

    mapping(uint256 => Workflow) internal _workflows; // key: _key(serviceId, callId)
    mapping(uint64 => uint64[]) internal _workflowIds;

    mapping(uint64 => address) public serviceOwner;

    // ── shared reads ────────────────────────────────────────────────────────────────────────

    /// Active and in a service that has not ended (termination freed the slots without
    /// touching each sandbox's record).
    function _live(Sandbox storage sb) internal view returns (bool) {
        return sb.active && !serviceEnded[sb.serviceId];
    }

    function _free(address op) internal view returns (uint256) {
        OperatorSlots storage s = _slots[op];
        uint256 used = uint256(s.active) + s.reserved;
        uint256 cap = s.capacity == 0 ? defaultCapacity : s.capacity;
        return used >= cap ? 0 : cap - used;
    }

    function _key(uint64 serviceId, uint64 callId) internal pure returns (uint256) {
        return (uint256(serviceId) << 64) | callId;
    }

    // ── pricing ───────────────────────────────────────────────────────────────────────────────

    /// CREATE 50, DELETE 1, WORKFLOW_CREATE 2, WORKFLOW_TRIGGER 5, WORKFLOW_CANCEL 1: one byte
    /// each, job 0 lowest (a table costs less code than a chain of ifs).
    uint256 internal constant MULTIPLIERS = 0x0105020132;

    function getJobPriceMultiplier(uint8 job) public view returns (uint256) {
        if (job >= JOB_COUNT || (instanceMode && job <= JOB_SANDBOX_DELETE)) return 0;
        return (MULTIPLIERS >> (8 * uint256(job))) & 0xff;
    }

    /// Rates (baseRate * multiplier) for the jobs this mode accepts.
    function getDefaultJobRates(uint256 baseRate)
        external
        view
        returns (uint8[] memory jobIndexes, uint256[] memory rates)
    {
        uint8 first = instanceMode ? JOB_WORKFLOW_CREATE : JOB_SANDBOX_CREATE;
        jobIndexes = new uint8[](JOB_COUNT - first);
        rates = new uint256[](JOB_COUNT - first);
        for (uint8 j = first; j < JOB_COUNT; j++) {
            jobIndexes[j - first] = j;
            rates[j - first] = baseRate * getJobPriceMultiplier(j);
        }
    }

    // ── views ─────────────────────────────────────────────────────────────────────────────────

    function capacityOf(address operator) public view returns (uint32) {
        uint32 cap = _slots[operator].capacity;
        return cap == 0 ? defaultCapacity : cap;
    }

    function getSandboxOperator(string calldata sandboxId) external view returns (address) {
        Sandbox storage sb = _sandboxes[keccak256(bytes(sandboxId))];
        return _live(sb) ? sb.operator : address(0);
    }

    function isSandboxActive(string calldata sandboxId) external view returns (bool) {
        return _live(_sandboxes[keccak256(bytes(sandboxId))]);
    }

    /// (active sandboxes, reserved by pending creates, capacity)
    function getOperatorLoad(address operator) external view returns (uint32 active, uint32 reserved, uint32 capacity) {
        return (_slots[operator].active, _slots[operator].reserved, capacityOf(operator));
    }

    /// Free slots summed over the operators registered to this blueprint.
    function getAvailableCapacity() external view returns (uint256 total) {
        for (uint256 i = 0; i < _operators.length; i++) {
            total += _free(_operators[i]);
        }
    }

    function getWorkflow(uint64 serviceId, uint64 workflowId) external view returns (Workflow memory) {
        return _workflows[_key(serviceId, workflowId)];
    }

    function getWorkflowIds(uint64 serviceId, bool activeOnly) external view returns (uint64[] memory ids) {
        uint64[] storage all = _workflowIds[serviceId];
        uint256 n = all.length;
        ids = new uint64[](n);
        uint256 k = 0;
        for (uint256 i = 0; i < n; i++) {
            uint64 id = all[i];
            if (!activeOnly || _workflows[_key(serviceId, id)].active) ids[k++] = id;
        }
        assembly {
            mstore(ids, k)
        }
    }

    constructor(bool _instanceMode, bool _teeRequired) AgentSandboxInstances(_instanceMode, _teeRequired) {}
}
