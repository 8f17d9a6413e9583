// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BlueprintServiceManagerBase} from "./tangle/BlueprintServiceManagerBase.sol";
import {ITangle} from "./tangle/ITangle.sol";

/// @title AgentSandboxBlueprint
/// @notice The agent-sandbox blueprint's service manager. One contract, three deployments:
///         cloud (instanceMode=false, teeRequired=false), instance (true, false) and TEE
///         instance (true, true). Cloud mode assigns each sandbox to one operator by free
///         capacity and routes its delete to that operator; instance modes record each
///         operator's provisioned endpoint. Workflows are stored in every mode.
/// @dev No secret ever goes on chain: inputs carry non-secret configuration, results public facts.
///      Job inputs are accepted flat (`abi.encode(f1, f2, ...)`) or as one tuple (`abi.encode(s)`).
contract AgentSandboxBlueprint is BlueprintServiceManagerBase {
    // ── jobs and pricing ──────────────────────────────────────────────────────────────────────
    uint8 public constant JOB_SANDBOX_CREATE = 0;
    uint8 public constant JOB_SANDBOX_DELETE = 1;
    uint8 public constant JOB_WORKFLOW_CREATE = 2;
    uint8 public constant JOB_WORKFLOW_TRIGGER = 3;
    uint8 public constant JOB_WORKFLOW_CANCEL = 4;
    uint8 public constant JOB_COUNT = 5;

    uint32 public constant INITIAL_DEFAULT_CAPACITY = 100;
    uint256 public constant MAX_SANDBOX_ID_LENGTH = 255;

    /// Head size of the flat encodings (number of fields * 32): the first word of a flat
    /// encoding is the offset of its first (dynamic) field, while a tuple encoding starts with 0x20.
    uint256 private constant CREATE_FLAT_HEAD = 18 * 32;
    uint256 private constant WORKFLOW_FLAT_HEAD = 8 * 32;

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
    }

    struct Provision {
        string sandboxId;
        string sidecarUrl;
        uint32 sshPort;
        bytes32 attestationHash;
        bool active;
    }

    /// What onJobCall keeps for onJobResult (which only gets the inputs' hash).
    struct PendingCall {
        bytes32 inputsHash;
        address operator; // assigned (create) or routed (delete)
        address caller;
        bytes32 sandboxHash; // delete: the sandbox
        uint64 workflowId; // trigger/cancel: the workflow
        bool open;
    }

    // ── state ─────────────────────────────────────────────────────────────────────────────────
    bool public immutable instanceMode;
    bool public immutable teeRequired;

    uint32 public defaultCapacity = INITIAL_DEFAULT_CAPACITY;
    /// Explicit per-operator capacity; 0 = follow defaultCapacity.
    mapping(address => uint32) public operatorCapacity;
    /// Sandboxes an operator holds (recorded by a create result, released by a delete result).
    mapping(address => uint32) public operatorActive;
    /// Slots reserved by assigned creates whose result has not arrived.
    mapping(address => uint32) public operatorReserved;
    mapping(uint64 => mapping(address => uint32)) public serviceOperatorActive;
    uint256 public totalActiveSandboxes;
    address[] private _operators;
    mapping(address => uint256) private _operatorIndex; // index + 1

    mapping(bytes32 => Sandbox) private _sandboxes;
    mapping(uint256 => PendingCall) private _pending;
    uint256 private _assignNonce;

    mapping(uint64 => Workflow) private _workflows;
    uint64[] private _workflowIds;

    mapping(uint64 => address) public serviceOwner;
    mapping(uint64 => bytes) private _requestConfig;
    /// serviceId => requestId + 1: the config stays where onRequest put it, because copying
    /// ~1 KB of storage would not fit the 500k gas a best-effort hook gets.
    mapping(uint64 => uint256) private _serviceRequest;
    mapping(uint64 => mapping(address => Provision)) private _provisions;
    mapping(uint64 => address[]) private _provisioned;
    mapping(address => uint32) public operatorProvisionCount;

    // ── events ────────────────────────────────────────────────────────────────────────────────
    event OperatorAssigned(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    event OperatorRouted(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    event SandboxCreated(bytes32 indexed sandboxHash, address indexed operator);
    event SandboxDeleted(bytes32 indexed sandboxHash, address indexed operator);
    event OperatorProvisioned(uint64 indexed serviceId, address indexed operator, string sandboxId, string sidecarUrl);
    event OperatorDeprovisioned(uint64 indexed serviceId, address indexed operator);
    event TeeAttestationStored(uint64 indexed serviceId, address indexed operator, bytes32 attestationHash);
    event WorkflowStored(uint64 indexed workflowId, uint64 indexed serviceId, string name, string triggerType);
    event WorkflowTriggered(uint64 indexed workflowId, uint64 indexed serviceId, uint64 triggeredAt);
    event WorkflowCanceled(uint64 indexed workflowId, uint64 indexed serviceId);
    event OperatorCapacitySet(address indexed operator, uint32 capacity);
    event DefaultCapacitySet(uint32 capacity);

    // ── errors ────────────────────────────────────────────────────────────────────────────────
    error InvalidModeFlags();
    error UnknownJob(uint8 job);
    error JobNotInInstanceMode(uint8 job);
    error InvalidJobInputs(uint8 job);
    error InvalidSandboxId();
    error InvalidTeeType(uint8 teeType);
    error TeeRequired();
    error UnknownSandbox(string sandboxId);
    error NotSandboxOwner(address caller, address owner);
    error SandboxNotInService(uint64 serviceId, uint64 sandboxServiceId);
    error NoOperatorCapacity(uint64 serviceId);
    error WorkflowNameRequired();
    error InvalidWorkflowTarget(uint8 targetKind, uint256 targetSandboxIdLength);
    error WorkflowIdInUse(uint64 workflowId, uint64 serviceId);
    error UnknownWorkflow(uint64 workflowId);
    error WorkflowNotActive(uint64 workflowId);
    error InvalidServiceConfig();
    error InvalidCapacity(uint256 capacity);
    error NotInstanceMode();
    error NotServiceOperator(uint64 serviceId, address caller);
    error AlreadyProvisioned(uint64 serviceId, address operator);
    error NotProvisioned(uint64 serviceId, address operator);
    error AttestationRequired();
    error InvalidEndpoint();
    error ServiceStillActive(uint64 serviceId);
    error JobCallUnavailable(uint64 serviceId, uint64 callId);
    error OperatorHasActiveSandboxes(address operator, uint32 sandboxes, uint32 provisions);

    constructor(bool _instanceMode, bool _teeRequired) {
        if (_teeRequired && !_instanceMode) revert InvalidModeFlags();
        instanceMode = _instanceMode;
        teeRequired = _teeRequired;
    }

    // ── operators ─────────────────────────────────────────────────────────────────────────────

    /// Reads `abi.encode(uint32 capacity)`; anything else (including the OperatorPreferences
    /// tuple the 3-argument registerOperator passes, which starts with 0x20) means the default.
    function onRegister(address operator, bytes calldata inputs) external payable override onlyFromTangle {
        uint32 cap = 0;
        if (inputs.length == 32 || (inputs.length > 32 && uint256(bytes32(inputs[:32])) != 0x20)) {
            uint256 word = uint256(bytes32(inputs[:32]));
            if (word > type(uint32).max) revert InvalidCapacity(word);
            // word <= type(uint32).max is checked above.
            // forge-lint: disable-next-line(unsafe-typecast)
            cap = uint32(word);
        }
        operatorCapacity[operator] = cap;
        if (_operatorIndex[operator] == 0) {
            _operators.push(operator);
            _operatorIndex[operator] = _operators.length;
        }
        emit OperatorCapacitySet(operator, cap == 0 ? defaultCapacity : cap);
    }

    /// Refused while the operator holds sandboxes or an instance provision.
    function onUnregister(address operator) external override onlyFromTangle {
        _requireIdle(operator);
        uint256 idx = _operatorIndex[operator];
        if (idx != 0) {
            address last = _operators[_operators.length - 1];
            _operators[idx - 1] = last;
            _operatorIndex[last] = idx;
            _operators.pop();
            delete _operatorIndex[operator];
        }
    }

    function canLeave(uint64 serviceId, address operator) external view override returns (bool) {
        return serviceOperatorActive[serviceId][operator] == 0 && !_provisions[serviceId][operator].active;
    }

    function _requireIdle(address operator) private view {
        uint32 held = operatorActive[operator] + operatorReserved[operator];
        uint32 provisions = operatorProvisionCount[operator];
        if (held > 0 || provisions > 0) revert OperatorHasActiveSandboxes(operator, held, provisions);
    }

    // ── admin (blueprint owner) ───────────────────────────────────────────────────────────────

    function setDefaultCapacity(uint32 capacity) external onlyBlueprintOwner {
        if (capacity == 0) revert InvalidCapacity(0);
        defaultCapacity = capacity;
        emit DefaultCapacitySet(capacity);
    }

    /// 0 returns the operator to the default capacity.
    function setOperatorCapacity(address operator, uint32 capacity) external onlyBlueprintOwner {
        operatorCapacity[operator] = capacity;
        emit OperatorCapacitySet(operator, capacity == 0 ? defaultCapacity : capacity);
    }

    // ── service lifecycle ─────────────────────────────────────────────────────────────────────

    /// Instance modes keep the request's config (an ABI-encoded SandboxCreateRequest, either form).
    function onRequest(uint64 requestId, address, address[] calldata, bytes calldata config, uint64, address, uint256)
        external
        payable
        override
        onlyFromTangle
    {
        if (!instanceMode) return;
        try this.checkJobInputs(JOB_SANDBOX_CREATE, config) {}
        catch (bytes memory reason) {
            // Keep a TEE refusal's own name; any other failure is an undecodable config.
            // takes the 4-byte error selector.
            // forge-lint: disable-next-line(unsafe-typecast)
            bytes4 sel = reason.length >= 4 ? bytes4(reason) : bytes4(0);
            if (sel == InvalidTeeType.selector || sel == TeeRequired.selector) _bubble(reason);
            revert InvalidServiceConfig();
        }
        _requestConfig[requestId] = config;
    }

    function onServiceInitialized(uint64, uint64 requestId, uint64 serviceId, address owner, address[] calldata, uint64)
        external
        override
        onlyFromTangle
    {
        serviceOwner[serviceId] = owner;
        if (instanceMode) _serviceRequest[serviceId] = uint256(requestId) + 1;
    }

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    function onJobCall(uint64 serviceId, uint8 job, uint64 callId, bytes calldata inputs)
        external
        payable
        override
        onlyFromTangle
    {
        if (job >= JOB_COUNT) revert UnknownJob(job);
        if (instanceMode && job <= JOB_SANDBOX_DELETE) revert JobNotInInstanceMode(job);
        // Decode and validate in a self-call so malformed ABI data becomes a named error.
        try this.checkJobInputs(job, inputs) {}
        catch (bytes memory reason) {
            if (reason.length == 0) revert InvalidJobInputs(job);
            _bubble(reason);
        }
        PendingCall storage p = _pending[_key(serviceId, callId)];
        p.inputsHash = keccak256(inputs);
        p.open = true;
        if (job == JOB_SANDBOX_CREATE) {
            p.caller = _callerOf(serviceId, callId);
            address op = _assign(serviceId, callId);
            p.operator = op;
            operatorReserved[op]++;
            emit OperatorAssigned(serviceId, callId, op);
        } else if (job == JOB_SANDBOX_DELETE) {
            string memory id = _decodeSandboxId(inputs);
            bytes32 h = keccak256(bytes(id));
            Sandbox storage sb = _sandboxes[h];
            if (!sb.active) revert UnknownSandbox(id);
            if (sb.serviceId != serviceId) revert SandboxNotInService(serviceId, sb.serviceId);
            address caller = _callerOf(serviceId, callId);
            if (caller != sb.owner) revert NotSandboxOwner(caller, sb.owner);
            p.caller = caller;
            p.operator = sb.operator;
            p.sandboxHash = h;
            emit OperatorRouted(serviceId, callId, sb.operator);
        } else if (job == JOB_WORKFLOW_CREATE) {
            _stageWorkflow(serviceId, callId, inputs);
        } else {
            uint64 wid = abi.decode(inputs, (uint64));
            Workflow storage w = _workflows[wid];
            if (w.created_at == 0 || w.service_id != serviceId) revert UnknownWorkflow(wid);
            if (!w.active) revert WorkflowNotActive(wid);
            p.workflowId = wid;
        }
    }

    /// Best-effort by protocol: never reverts on a bad result, records nothing instead.
    function onJobResult(uint64 serviceId, uint8 job, uint64 callId, address operator, bytes32 inputsHash, bytes calldata outputs)
        external
        payable
        override
        onlyFromTangle
    {
        uint256 key = _key(serviceId, callId);
        PendingCall memory p = _pending[key];
        if (!p.open || p.inputsHash != inputsHash) return;
        delete _pending[key];
        if (job == JOB_SANDBOX_CREATE) {
            // The call is complete after this result whoever sent it: release the reservation.
            operatorReserved[p.operator]--;
            if (operator != p.operator) return;
            try this.decodeCreateOutput(outputs) returns (string memory id, string memory) {
                _recordSandbox(serviceId, id, operator, p.caller);
            } catch {}
        } else if (job == JOB_SANDBOX_DELETE) {
            Sandbox storage sb = _sandboxes[p.sandboxHash];
            if (!sb.active || operator != sb.operator) return;
            sb.active = false;
            operatorActive[operator]--;
            serviceOperatorActive[sb.serviceId][operator]--;
            totalActiveSandboxes--;
            emit SandboxDeleted(p.sandboxHash, operator);
        } else if (job == JOB_WORKFLOW_CREATE) {
            Workflow storage w = _workflows[callId];
            if (w.service_id != serviceId) return;
            uint64 nowTs = uint64(block.timestamp);
            if (w.created_at == 0) {
                w.created_at = nowTs;
                _workflowIds.push(callId);
            }
            w.active = true;
            w.updated_at = nowTs;
            emit WorkflowStored(callId, serviceId, w.name, w.trigger_type);
        } else if (job == JOB_WORKFLOW_TRIGGER) {
            Workflow storage w = _workflows[p.workflowId];
            if (!w.active) return;
            w.last_triggered_at = uint64(block.timestamp);
            w.updated_at = uint64(block.timestamp);
            emit WorkflowTriggered(p.workflowId, serviceId, uint64(block.timestamp));
        } else if (job == JOB_WORKFLOW_CANCEL) {
            Workflow storage w = _workflows[p.workflowId];
            if (!w.active) return;
            w.active = false;
            w.updated_at = uint64(block.timestamp);
            emit WorkflowCanceled(p.workflowId, serviceId);
        }
    }

    function _recordSandbox(uint64 serviceId, string memory id, address operator, address owner) private {
        bytes memory b = bytes(id);
        if (b.length == 0 || b.length > MAX_SANDBOX_ID_LENGTH) return;
        bytes32 h = keccak256(b);
        Sandbox storage sb = _sandboxes[h];
        if (sb.active) return;
        sb.operator = operator;
        sb.owner = owner;
        sb.serviceId = serviceId;
        sb.createdAt = uint64(block.timestamp);
        sb.active = true;
        operatorActive[operator]++;
        serviceOperatorActive[serviceId][operator]++;
        totalActiveSandboxes++;
        emit SandboxCreated(h, operator);
    }

    /// Weighted by free capacity, seeded by (prevrandao, serviceId, callId, nonce).
    function _assign(uint64 serviceId, uint64 callId) private returns (address) {
        address[] memory ops = ITangle(tangleCore).getServiceOperators(serviceId);
        uint256[] memory free = new uint256[](ops.length);
        uint256 total = 0;
        for (uint256 i = 0; i < ops.length; i++) {
            free[i] = _free(ops[i]);
            total += free[i];
        }
        if (total == 0) revert NoOperatorCapacity(serviceId);
        uint256 r = uint256(keccak256(abi.encode(block.prevrandao, serviceId, callId, _assignNonce++))) % total;
        for (uint256 i = 0; i < ops.length; i++) {
            if (r < free[i]) return ops[i];
            r -= free[i];
        }
        revert NoOperatorCapacity(serviceId); // unreachable: r < total
    }

    function _free(address op) private view returns (uint256) {
        uint256 used = uint256(operatorActive[op]) + operatorReserved[op];
        uint256 cap = capacityOf(op);
        return used >= cap ? 0 : cap - used;
    }

    function _stageWorkflow(uint64 serviceId, uint64 callId, bytes calldata inputs) private {
        WorkflowCreateRequest memory r =
            abi.decode(_asTuple(inputs, WORKFLOW_FLAT_HEAD, JOB_WORKFLOW_CREATE), (WorkflowCreateRequest));
        Workflow storage w = _workflows[callId];
        // Workflow ids are the create call's id; call ids count per service, so one id can only
        // belong to one service of this deployment.
        if (w.created_at != 0 && w.service_id != serviceId) revert WorkflowIdInUse(callId, w.service_id);
        w.name = r.name;
        w.workflow_json = r.workflow_json;
        w.trigger_type = r.trigger_type;
        w.trigger_config = r.trigger_config;
        w.sandbox_config_json = r.sandbox_config_json;
        w.target_kind = r.target_kind;
        w.target_sandbox_id = r.target_sandbox_id;
        w.target_service_id = r.target_service_id;
        w.service_id = serviceId;
        w.owner = _callerOf(serviceId, callId);
    }

    function _bubble(bytes memory reason) private pure {
        assembly {
            revert(add(reason, 0x20), mload(reason))
        }
    }

    /// The job's caller from Tangle's record. Reads only the first two words (jobIndex, caller):
    /// they lead in every tnt-core layout of JobCall, while later fields moved between versions.
    function _callerOf(uint64 serviceId, uint64 callId) private view returns (address caller) {
        (bool ok, bytes memory ret) =
            tangleCore.staticcall(abi.encodeCall(ITangle.getJobCall, (serviceId, callId)));
        if (!ok || ret.length < 64) revert JobCallUnavailable(serviceId, callId);
        (, caller) = abi.decode(ret, (uint256, address));
    }

    function _key(uint64 serviceId, uint64 callId) private pure returns (uint256) {
        return (uint256(serviceId) << 64) | callId;
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
    function _decodeSandboxId(bytes calldata data) private pure returns (string memory) {
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

    function _asTuple(bytes calldata data, uint256 flatHead, uint8 job) private pure returns (bytes memory) {
        if (data.length < 32) revert InvalidJobInputs(job);
        uint256 first = _word(data, 0);
        if (first == 0x20) return data;
        if (first == flatHead) return bytes.concat(bytes32(uint256(0x20)), data);
        revert InvalidJobInputs(job);
    }

    function _word(bytes calldata data, uint256 pos) private pure returns (uint256) {
        return uint256(bytes32(data[pos:pos + 32]));
    }

    /// After its service ends (terminated or expired) no delete job can be submitted, so the
    /// holding operator releases the slot of a sandbox it has torn down itself.
    function releaseSandbox(string calldata sandboxId) external {
        bytes32 h = keccak256(bytes(sandboxId));
        Sandbox storage sb = _sandboxes[h];
        if (!sb.active) revert UnknownSandbox(sandboxId);
        if (msg.sender != sb.operator) revert NotSandboxOwner(msg.sender, sb.operator);
        if (ITangle(tangleCore).isServiceActive(sb.serviceId)) revert ServiceStillActive(sb.serviceId);
        sb.active = false;
        operatorActive[msg.sender]--;
        serviceOperatorActive[sb.serviceId][msg.sender]--;
        totalActiveSandboxes--;
        emit SandboxDeleted(h, msg.sender);
    }

    // ── instance modes ────────────────────────────────────────────────────────────────────────

    function reportProvisioned(
        uint64 serviceId,
        string calldata sandboxId,
        string calldata sidecarUrl,
        uint32 sshPort,
        string calldata teeAttestationJson
    ) external {
        if (!instanceMode) revert NotInstanceMode();
        if (!ITangle(tangleCore).isServiceOperator(serviceId, msg.sender)) {
            revert NotServiceOperator(serviceId, msg.sender);
        }
        Provision storage pv = _provisions[serviceId][msg.sender];
        if (pv.active) revert AlreadyProvisioned(serviceId, msg.sender);
        uint256 n = bytes(sandboxId).length;
        if (n == 0 || n > MAX_SANDBOX_ID_LENGTH) revert InvalidSandboxId();
        if (bytes(sidecarUrl).length == 0) revert InvalidEndpoint();
        bool attested = bytes(teeAttestationJson).length != 0;
        if (teeRequired && !attested) revert AttestationRequired();
        pv.sandboxId = sandboxId;
        pv.sidecarUrl = sidecarUrl;
        pv.sshPort = sshPort;
        pv.attestationHash = attested ? keccak256(bytes(teeAttestationJson)) : bytes32(0);
        pv.active = true;
        _provisioned[serviceId].push(msg.sender);
        operatorProvisionCount[msg.sender]++;
        emit OperatorProvisioned(serviceId, msg.sender, sandboxId, sidecarUrl);
        if (attested) emit TeeAttestationStored(serviceId, msg.sender, pv.attestationHash);
    }

    function reportDeprovisioned(uint64 serviceId) external {
        Provision storage pv = _provisions[serviceId][msg.sender];
        if (!pv.active) revert NotProvisioned(serviceId, msg.sender);
        delete _provisions[serviceId][msg.sender];
        address[] storage list = _provisioned[serviceId];
        for (uint256 i = 0; i < list.length; i++) {
            if (list[i] == msg.sender) {
                list[i] = list[list.length - 1];
                list.pop();
                break;
            }
        }
        operatorProvisionCount[msg.sender]--;
        emit OperatorDeprovisioned(serviceId, msg.sender);
    }

    function isOperatorProvisioned(uint64 serviceId, address operator) external view returns (bool) {
        return _provisions[serviceId][operator].active;
    }

    function getOperatorEndpoints(uint64 serviceId)
        external
        view
        returns (address[] memory operators, string[] memory sidecarUrls)
    {
        operators = _provisioned[serviceId];
        sidecarUrls = new string[](operators.length);
        for (uint256 i = 0; i < operators.length; i++) {
            sidecarUrls[i] = _provisions[serviceId][operators[i]].sidecarUrl;
        }
    }

    function getProvision(uint64 serviceId, address operator) external view returns (Provision memory) {
        return _provisions[serviceId][operator];
    }

    function getAttestationHash(uint64 serviceId, address operator) external view returns (bytes32) {
        return _provisions[serviceId][operator].attestationHash;
    }

    /// The instance's spec: the request's config (an ABI-encoded SandboxCreateRequest, as given).
    function getServiceConfig(uint64 serviceId) external view returns (bytes memory) {
        uint256 r = _serviceRequest[serviceId];
        // r - 1 is a uint64 request id stored +1.
        // forge-lint: disable-next-line(unsafe-typecast)
        return r == 0 ? bytes("") : _requestConfig[uint64(r - 1)];
    }

    // ── pricing ───────────────────────────────────────────────────────────────────────────────

    function getJobPriceMultiplier(uint8 job) public view returns (uint256) {
        if (instanceMode && job <= JOB_SANDBOX_DELETE) return 0;
        if (job == JOB_SANDBOX_CREATE) return 50;
        if (job == JOB_SANDBOX_DELETE) return 1;
        if (job == JOB_WORKFLOW_CREATE) return 2;
        if (job == JOB_WORKFLOW_TRIGGER) return 5;
        if (job == JOB_WORKFLOW_CANCEL) return 1;
        return 0;
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
        uint32 cap = operatorCapacity[operator];
        return cap == 0 ? defaultCapacity : cap;
    }

    function getSandbox(string calldata sandboxId) external view returns (Sandbox memory) {
        return _sandboxes[keccak256(bytes(sandboxId))];
    }

    function getSandboxOperator(string calldata sandboxId) external view returns (address) {
        Sandbox storage sb = _sandboxes[keccak256(bytes(sandboxId))];
        return sb.active ? sb.operator : address(0);
    }

    function isSandboxActive(string calldata sandboxId) external view returns (bool) {
        return _sandboxes[keccak256(bytes(sandboxId))].active;
    }

    /// (active sandboxes, reserved by pending creates, capacity)
    function getOperatorLoad(address operator) external view returns (uint32 active, uint32 reserved, uint32 capacity) {
        return (operatorActive[operator], operatorReserved[operator], capacityOf(operator));
    }

    /// Free slots summed over the operators registered to this blueprint.
    function getAvailableCapacity() external view returns (uint256 total) {
        for (uint256 i = 0; i < _operators.length; i++) {
            total += _free(_operators[i]);
        }
    }

    function getOperators() external view returns (address[] memory) {
        return _operators;
    }

    function getWorkflow(uint64 workflowId) external view returns (Workflow memory) {
        return _workflows[workflowId];
    }

    function getWorkflowIds(bool activeOnly) external view returns (uint64[] memory ids) {
        uint256 n = _workflowIds.length;
        ids = new uint64[](n);
        uint256 k = 0;
        for (uint256 i = 0; i < n; i++) {
            uint64 id = _workflowIds[i];
            if (!activeOnly || _workflows[id].active) ids[k++] = id;
        }
        assembly {
            mstore(ids, k)
        }
    }
}
