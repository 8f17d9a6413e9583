// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangle} from "./tangle/ITangle.sol";
import {AgentSandboxInstances} from "./AgentSandboxInstances.sol";
import {AgentSandboxState} from "./AgentSandboxState.sol";

/// @title AgentSandboxBlueprint
/// @notice The agent-sandbox blueprint's service manager. One contract, three deployments:
///         cloud (instanceMode=false, teeRequired=false), instance (true, false) and TEE
///         instance (true, true). Cloud mode assigns each sandbox to one operator by free
///         capacity and routes its delete to that operator; instance modes record each
///         operator's provisioned endpoint. Workflows are stored in every mode, keyed by
///         (serviceId, callId), and only their owner may create, trigger or cancel them.
/// @dev No secret ever goes on chain: inputs carry non-secret configuration, results public facts.
///      Only the chosen operator's result counts (assigned create, routed delete, the target
///      sandbox's holder for a workflow); any other is ignored with ResultIgnored. Who may call
///      what: contracts/README.md.
///      Job inputs are accepted flat (`abi.encode(f1, f2, ...)`) or as one tuple (`abi.encode(s)`).
contract AgentSandboxBlueprint is AgentSandboxState {
    // ── events ────────────────────────────────────────────────────────────────────────────────
    event OperatorAssigned(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    event OperatorRouted(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    event SandboxCreated(bytes32 indexed sandboxHash, address indexed operator);
    event SandboxDeleted(bytes32 indexed sandboxHash, address indexed operator);
    event WorkflowStored(uint64 indexed workflowId, uint64 indexed serviceId, string name, string triggerType);
    event WorkflowTriggered(uint64 indexed workflowId, uint64 indexed serviceId, uint64 triggeredAt);
    event WorkflowCanceled(uint64 indexed workflowId, uint64 indexed serviceId);
    event OperatorCapacitySet(address indexed operator, uint32 capacity);
    event DefaultCapacitySet(uint32 capacity);
    event ReservationTimeoutSet(uint64 timeoutSeconds);
    /// A result that changed nothing: from an operator that was not chosen for the call, or for a
    /// call no longer open (its reservation was released after the timeout, or it was settled).
    /// The chosen operator that meets it in its own result's receipt undoes what it built.
    event ResultIgnored(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    /// The chosen operator's outcome, recorded by settleCall after Tangle took another's result.
    event CallSettled(uint64 indexed serviceId, uint64 indexed callId, address indexed operator, bytes outputs);
    event ReservationReleased(uint64 indexed serviceId, uint64 indexed callId, address indexed operator);
    event SandboxGone(bytes32 indexed sandboxHash, address indexed operator);

    // ── errors ────────────────────────────────────────────────────────────────────────────────
    error JobNotInInstanceMode(uint8 job);
    error UnknownSandbox(string sandboxId);
    error NotSandboxOwner(address caller, address owner);
    error SandboxNotInService(uint64 serviceId, uint64 sandboxServiceId);
    error NoOperatorCapacity(uint64 serviceId);
    error NotWorkflowOwner(address caller, address owner);
    error UnknownWorkflow(uint64 workflowId);
    error WorkflowNotActive(uint64 workflowId);
    error InvalidCapacity(uint256 capacity);
    error NotChosenOperator(uint64 serviceId, uint64 callId, address caller);
    error NoReservation(uint64 serviceId, uint64 callId);
    error ReservationNotExpired(uint64 serviceId, uint64 callId, uint64 expiresAt);
    error JobCallUnavailable(uint64 serviceId, uint64 callId);
    error OperatorHasActiveSandboxes(address operator, uint32 sandboxes, uint32 provisions);

    constructor(bool _instanceMode, bool _teeRequired) AgentSandboxState(_instanceMode, _teeRequired) {}

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
        _slots[operator].capacity = cap;
        _slots[operator].known = true;
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

    /// No sandbox in this service, no reservation anywhere (reservations are not kept per
    /// service, so that assignment gas never depends on the pick) and no provision here.
    function canLeave(uint64 serviceId, address operator) external view override returns (bool) {
        return serviceOperatorActive[serviceId][operator] == 0 && _slots[operator].reserved == 0
            && !_provisions[serviceId][operator].active;
    }

    function _requireIdle(address operator) private view {
        uint32 held = _slots[operator].active + _slots[operator].reserved;
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
        _slots[operator].capacity = capacity;
        emit OperatorCapacitySet(operator, capacity == 0 ? defaultCapacity : capacity);
    }

    function setReservationTimeout(uint64 timeoutSeconds) external onlyBlueprintOwner {
        if (timeoutSeconds == 0) revert InvalidCapacity(0);
        reservationTimeout = timeoutSeconds;
        emit ReservationTimeoutSet(timeoutSeconds);
    }

    // ── service lifecycle ─────────────────────────────────────────────────────────────────────

    function onServiceInitialized(uint64, uint64 requestId, uint64 serviceId, address owner, address[] calldata, uint64)
        external
        override
        onlyFromTangle
    {
        serviceOwner[serviceId] = owner;
        _serviceRequest[serviceId] = uint256(requestId) + 1;
    }

    /// Frees every slot the service's sandboxes held (bounded by its operator count, not by its
    /// sandboxes). Its pending creates' reservations are released by anyone (releaseReservation).
    function onServiceTermination(uint64 serviceId, address) external override onlyFromTangle {
        serviceEnded[serviceId] = true;
        address[] memory list = ITangle(tangleCore).getServiceOperators(serviceId);
        uint256 freed = 0;
        for (uint256 i = 0; i < list.length; i++) {
            uint32 n = serviceOperatorActive[serviceId][list[i]];
            if (n == 0) continue;
            _slots[list[i]].active -= n;
            serviceOperatorActive[serviceId][list[i]] = 0;
            freed += n;
        }
        totalActiveSandboxes -= freed;
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
        address caller = _callerOf(serviceId, callId);
        PendingCall storage p = _pending[_key(serviceId, callId)];
        p.inputsHash = keccak256(inputs);
        p.calledAt = uint64(block.timestamp);
        p.job = job;
        p.open = true;
        p.caller = caller;
        if (job == JOB_SANDBOX_CREATE) {
            address op = _assign(serviceId, callId);
            p.operator = op;
            _slots[op].reserved++;
            emit OperatorAssigned(serviceId, callId, op);
        } else if (job == JOB_SANDBOX_DELETE) {
            string memory id = _decodeSandboxId(inputs);
            bytes32 h = keccak256(bytes(id));
            Sandbox storage sb = _sandboxes[h];
            // A sandbox its operator reported gone can still be deleted by its owner (a no-op).
            if (!(_live(sb) || sb.gone)) revert UnknownSandbox(id);
            _requireOwned(sb, serviceId, caller);
            p.operator = sb.operator;
            p.sandboxHash = h;
            emit OperatorRouted(serviceId, callId, sb.operator);
        } else if (job == JOB_WORKFLOW_CREATE) {
            p.operator = _stageWorkflow(serviceId, callId, caller, inputs);
        } else {
            uint64 wid = abi.decode(inputs, (uint64));
            Workflow storage w = _workflows[_key(serviceId, wid)];
            if (w.created_at == 0) revert UnknownWorkflow(wid);
            if (caller != w.owner) revert NotWorkflowOwner(caller, w.owner);
            if (!w.active) revert WorkflowNotActive(wid);
            p.workflowId = wid;
            if (!instanceMode) p.operator = _sandboxes[keccak256(bytes(w.target_sandbox_id))].operator;
        }
    }

    /// Best-effort by protocol: never reverts on a bad result, records nothing instead. A result
    /// from an operator other than the chosen one, or for a call no longer open (released,
    /// settled), changes nothing but emits ResultIgnored.
    function onJobResult(uint64 serviceId, uint8, uint64 callId, address operator, bytes32 inputsHash, bytes calldata outputs)
        external
        payable
        override
        onlyFromTangle
    {
        uint256 key = _key(serviceId, callId);
        PendingCall storage p = _pending[key];
        if (!p.open || p.inputsHash != inputsHash || (p.operator != address(0) && operator != p.operator)) {
            emit ResultIgnored(serviceId, callId, operator);
            return;
        }
        _settle(serviceId, callId, key, outputs);
    }

    /// The chosen operator records its outcome when Tangle already completed the call with
    /// another operator's result (its consumer calls this on JobAlreadyCompleted).
    function settleCall(uint64 serviceId, uint64 callId, bytes calldata outputs) external {
        uint256 key = _key(serviceId, callId);
        PendingCall storage p = _pending[key];
        if (!p.open || p.operator == address(0) || msg.sender != p.operator) {
            revert NotChosenOperator(serviceId, callId, msg.sender);
        }
        _settle(serviceId, callId, key, outputs);
        emit CallSettled(serviceId, callId, msg.sender, outputs);
    }

    /// Frees a create's reserved slot: its assigned operator at any time (it gave up on the
    /// call), anyone once the reservation expired or the service was terminated.
    function releaseReservation(uint64 serviceId, uint64 callId) external {
        uint256 key = _key(serviceId, callId);
        PendingCall storage p = _pending[key];
        if (!p.open || p.job != JOB_SANDBOX_CREATE) revert NoReservation(serviceId, callId);
        address op = p.operator;
        uint64 expiresAt = p.calledAt + reservationTimeout;
        // forge-lint: disable-next-line(block-timestamp)
        if (msg.sender != op && block.timestamp < expiresAt && !serviceEnded[serviceId]) {
            revert ReservationNotExpired(serviceId, callId, expiresAt);
        }
        delete _pending[key];
        _slots[op].reserved--;
        emit ReservationReleased(serviceId, callId, op);
    }

    /// The holding operator stopped a sandbox for good (lifetime, GC, failure beyond repair):
    /// its slot is freed and a later delete by its owner is a no-op.
    function reportSandboxGone(string calldata sandboxId) external {
        bytes32 h = keccak256(bytes(sandboxId));
        Sandbox storage sb = _sandboxes[h];
        if (!_live(sb)) revert UnknownSandbox(sandboxId);
        if (msg.sender != sb.operator) revert NotSandboxOwner(msg.sender, sb.operator);
        _release(sb);
        sb.gone = true;
        emit SandboxGone(h, msg.sender);
    }

    function _settle(uint64 serviceId, uint64 callId, uint256 key, bytes calldata outputs) private {
        PendingCall memory p = _pending[key];
        delete _pending[key];
        uint64 nowTs = uint64(block.timestamp);
        if (p.job == JOB_SANDBOX_CREATE) {
            _slots[p.operator].reserved--;
            if (serviceEnded[serviceId]) return;
            try this.decodeCreateOutput(outputs) returns (string memory id, string memory) {
                _recordSandbox(serviceId, id, p.operator, p.caller);
            } catch {}
        } else if (p.job == JOB_SANDBOX_DELETE) {
            Sandbox storage sb = _sandboxes[p.sandboxHash];
            sb.gone = false;
            if (!_live(sb)) return;
            _release(sb);
            emit SandboxDeleted(p.sandboxHash, p.operator);
        } else if (p.job == JOB_WORKFLOW_CREATE) {
            Workflow storage w = _workflows[key];
            if (w.created_at == 0) {
                w.created_at = nowTs;
                _workflowIds[serviceId].push(callId);
            }
            w.active = true;
            w.updated_at = nowTs;
            emit WorkflowStored(callId, serviceId, w.name, w.trigger_type);
        } else {
            Workflow storage w = _workflows[_key(serviceId, p.workflowId)];
            if (!w.active) return;
            w.updated_at = nowTs;
            if (p.job == JOB_WORKFLOW_TRIGGER) {
                w.last_triggered_at = nowTs;
                emit WorkflowTriggered(p.workflowId, serviceId, nowTs);
            } else {
                w.active = false;
                emit WorkflowCanceled(p.workflowId, serviceId);
            }
        }
    }

    function _requireOwned(Sandbox storage sb, uint64 serviceId, address caller) private view {
        if (sb.serviceId != serviceId) revert SandboxNotInService(serviceId, sb.serviceId);
        if (caller != sb.owner) revert NotSandboxOwner(caller, sb.owner);
    }

    function _release(Sandbox storage sb) private {
        sb.active = false;
        _slots[sb.operator].active--;
        serviceOperatorActive[sb.serviceId][sb.operator]--;
        totalActiveSandboxes--;
    }

    function _recordSandbox(uint64 serviceId, string memory id, address operator, address owner) private {
        bytes memory b = bytes(id);
        if (b.length == 0 || b.length > MAX_SANDBOX_ID_LENGTH) return;
        bytes32 h = keccak256(b);
        Sandbox storage sb = _sandboxes[h];
        if (_live(sb) || sb.gone) return;
        sb.operator = operator;
        sb.owner = owner;
        sb.serviceId = serviceId;
        sb.createdAt = uint64(block.timestamp);
        sb.active = true;
        _slots[operator].active++;
        serviceOperatorActive[serviceId][operator]++;
        totalActiveSandboxes++;
        emit SandboxCreated(h, operator);
    }

    /// Weighted by free capacity, seeded by (prevrandao, serviceId, callId, nonce). The gas it
    /// uses does not depend on the pick: every operator's word is read, the pick is a branch-free
    /// scan over all of them, and the caller's `reserved++` hits a word that is never zero.
    function _assign(uint64 serviceId, uint64 callId) private returns (address op) {
        address[] memory ops = ITangle(tangleCore).getServiceOperators(serviceId);
        uint256[] memory free = new uint256[](ops.length);
        uint256 total = 0;
        for (uint256 i = 0; i < ops.length; i++) {
            free[i] = _free(ops[i]);
            total += free[i];
        }
        if (total == 0) revert NoOperatorCapacity(serviceId);
        uint256 r = uint256(keccak256(abi.encode(block.prevrandao, serviceId, callId, _assignNonce++))) % total;
        assembly {
            let n := mload(ops)
            let found := 0
            for { let i := 0 } lt(i, n) { i := add(i, 1) } {
                let f := mload(add(free, mul(add(i, 1), 0x20)))
                // hit: first operator whose window contains r (r < f and none found before).
                let hit := and(lt(r, f), iszero(found))
                op := or(op, mul(hit, mload(add(ops, mul(add(i, 1), 0x20)))))
                // Once found, stop moving r: subtract f only while nothing is found.
                r := sub(r, mul(iszero(or(found, hit)), f))
                found := or(found, hit)
            }
        }
    }

    /// Stages the workflow until its result; the target must be the caller's own live sandbox in
    /// this service (cloud) or the caller must own the service (instance). Returns the operator
    /// whose result counts (the sandbox's holder; 0 = any, in instance mode).
    function _stageWorkflow(uint64 serviceId, uint64 callId, address caller, bytes calldata inputs)
        private
        returns (address holder)
    {
        WorkflowCreateRequest memory r =
            abi.decode(_asTuple(inputs, WORKFLOW_FLAT_HEAD, JOB_WORKFLOW_CREATE), (WorkflowCreateRequest));
        if (r.target_service_id != 0 && r.target_service_id != serviceId) {
            revert SandboxNotInService(serviceId, r.target_service_id);
        }
        if (instanceMode) {
            if (caller != serviceOwner[serviceId]) revert NotSandboxOwner(caller, serviceOwner[serviceId]);
        } else {
            Sandbox storage sb = _sandboxes[keccak256(bytes(r.target_sandbox_id))];
            if (!_live(sb)) revert UnknownSandbox(r.target_sandbox_id);
            _requireOwned(sb, serviceId, caller);
            holder = sb.operator;
        }
        Workflow storage w = _workflows[_key(serviceId, callId)];
        w.name = r.name;
        w.workflow_json = r.workflow_json;
        w.trigger_type = r.trigger_type;
        w.trigger_config = r.trigger_config;
        w.sandbox_config_json = r.sandbox_config_json;
        w.target_kind = r.target_kind;
        w.target_sandbox_id = r.target_sandbox_id;
        w.target_service_id = r.target_service_id;
        w.service_id = serviceId;
        w.owner = caller;
    }

    /// The job's caller from Tangle's record. Reads only the first two words (jobIndex, caller):
    /// they lead in every tnt-core layout of JobCall, while later fields moved between versions.
    function _callerOf(uint64 serviceId, uint64 callId) private view returns (address caller) {
        (bool ok, bytes memory ret) =
            tangleCore.staticcall(abi.encodeCall(ITangle.getJobCall, (serviceId, callId)));
        if (!ok || ret.length < 64) revert JobCallUnavailable(serviceId, callId);
        (, caller) = abi.decode(ret, (uint256, address));
    }
}
