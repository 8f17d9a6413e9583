// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";
import {LocalTangleState} from "./LocalTangleState.sol";

/// @title LocalTangle
/// @notice A local stand-in for the Tangle core contract, for the devnet and tests: same calls,
///         same events, same hook semantics as the real protocol (tnt-core 0.19.x), written from
///         the project's spec. Differences from the real one (by design, local only): staking,
///         payments distribution, slashing, BLS and RFQ are absent; createBlueprint takes
///         (metadataUri, manager) instead of a full definition; native payments stay here.
contract LocalTangle is LocalTangleState {
    // ── blueprints ────────────────────────────────────────────────────────────────────────────

    /// @notice Creates a blueprint owned by the caller. Ids count from 0. The manager's
    ///         onBlueprintCreated runs as a reverting hook (a refusal fails the creation).
    ///         `manager` may be zero (no hooks). metadataHash = keccak256(metadataUri).
    function createBlueprint(string calldata metadataUri, address manager) external returns (uint64 blueprintId) {
        blueprintId = blueprintCount++;
        BlueprintRecord storage b = _blueprints[blueprintId];
        b.owner = msg.sender;
        b.manager = manager;
        b.createdAt = uint64(block.timestamp);
        b.exists = true;
        b.metadataUri = metadataUri;
        if (manager != address(0)) {
            IBlueprintServiceManager(manager).onBlueprintCreated(blueprintId, msg.sender, address(this));
        }
        emit BlueprintCreated(blueprintId, msg.sender, manager, metadataUri, keccak256(bytes(metadataUri)));
    }

    function getBlueprint(uint64 blueprintId)
        external
        view
        returns (address owner, address manager, uint64 createdAt, string memory metadataUri)
    {
        BlueprintRecord storage b = _blueprint(blueprintId);
        return (b.owner, b.manager, b.createdAt, b.metadataUri);
    }

    // ── operators ─────────────────────────────────────────────────────────────────────────────

    function registerOperator(uint64 blueprintId, bytes calldata ecdsaPublicKey, string calldata rpcAddress)
        external
        payable
    {
        _register(blueprintId, ecdsaPublicKey, rpcAddress, abi.encode(OperatorPreferences(ecdsaPublicKey, rpcAddress)));
    }

    function registerOperator(
        uint64 blueprintId,
        bytes calldata ecdsaPublicKey,
        string calldata rpcAddress,
        bytes calldata registrationInputs
    ) external payable {
        _register(blueprintId, ecdsaPublicKey, rpcAddress, registrationInputs);
    }

    /// The protocol's OperatorPreferences, as the 3-argument registerOperator encodes it.
    struct OperatorPreferences {
        bytes ecdsaPublicKey;
        string rpcAddress;
    }

    function _register(uint64 blueprintId, bytes calldata key, string calldata rpc, bytes memory inputs) private {
        BlueprintRecord storage b = _blueprint(blueprintId);
        Registration storage r = _registrations[blueprintId][msg.sender];
        if (r.registered) revert OperatorAlreadyRegistered(blueprintId, msg.sender);
        // 65-byte uncompressed secp256k1 key: 0x04 || X || Y.
        if (key.length != 65 || key[0] != 0x04) revert InvalidOperatorKey();
        r.registered = true;
        r.ecdsaPublicKey = key;
        r.rpcAddress = rpc;
        if (b.manager != address(0)) {
            IBlueprintServiceManager(b.manager).onRegister{value: msg.value}(msg.sender, inputs);
        }
        emit OperatorRegistered(blueprintId, msg.sender, key, rpc);
    }

    /// @notice Leaves a blueprint. Refused while the operator serves an active service; the
    ///         manager's onUnregister runs best-effort (as in the protocol).
    function unregisterOperator(uint64 blueprintId) external {
        BlueprintRecord storage b = _blueprint(blueprintId);
        Registration storage r = _registrations[blueprintId][msg.sender];
        if (!r.registered) revert OperatorNotRegistered(blueprintId, msg.sender);
        if (activeServiceCount[blueprintId][msg.sender] > 0) revert OperatorHasActiveServices(blueprintId, msg.sender);
        delete _registrations[blueprintId][msg.sender];
        if (b.manager != address(0)) {
            _bestEffort(b.manager, abi.encodeCall(IBlueprintServiceManager.onUnregister, (msg.sender)));
        }
        emit OperatorUnregistered(blueprintId, msg.sender);
    }

    function isOperatorRegistered(uint64 blueprintId, address operator) external view returns (bool) {
        return _registrations[blueprintId][operator].registered;
    }

    function getOperatorPreferences(uint64 blueprintId, address operator)
        external
        view
        returns (bytes memory ecdsaPublicKey, string memory rpcAddress)
    {
        Registration storage r = _registrations[blueprintId][operator];
        if (!r.registered) revert OperatorNotRegistered(blueprintId, operator);
        return (r.ecdsaPublicKey, r.rpcAddress);
    }

    // ── service requests ──────────────────────────────────────────────────────────────────────

    /// @notice Requests a service; the caller is the requester (and future owner, always a
    ///         permitted caller). Native payment must come as msg.value == paymentAmount; ERC20
    ///         payment is not supported locally. onRequest is a reverting hook.
    function requestService(
        uint64 blueprintId,
        address[] calldata operators,
        bytes calldata config,
        address[] calldata permittedCallers,
        uint64 ttl,
        address paymentToken,
        uint256 paymentAmount,
        uint8 confidentiality
    ) external payable returns (uint64 requestId) {
        BlueprintRecord storage b = _blueprint(blueprintId);
        if (operators.length == 0) revert NoOperators();
        if (confidentiality > 3) revert InvalidConfidentiality(confidentiality);
        if (paymentToken != address(0)) revert TokenNotAllowed(paymentToken);
        if (msg.value != paymentAmount) revert InvalidMsgValue(paymentAmount, msg.value);
        for (uint256 i = 0; i < operators.length; i++) {
            if (!_registrations[blueprintId][operators[i]].registered) {
                revert OperatorNotRegistered(blueprintId, operators[i]);
            }
            for (uint256 j = 0; j < i; j++) {
                if (operators[j] == operators[i]) revert DuplicateOperator(operators[i]);
            }
        }
        requestId = serviceRequestCount++;
        Request storage q = _requests[requestId];
        q.blueprintId = blueprintId;
        q.requester = msg.sender;
        q.createdAt = uint64(block.timestamp);
        q.ttl = ttl;
        q.paymentToken = paymentToken;
        q.paymentAmount = paymentAmount;
        q.confidentiality = confidentiality;
        q.exists = true;
        q.operators = operators;
        q.permittedCallers = permittedCallers;
        q.config = config;
        if (b.manager != address(0)) _callOnRequest(b.manager, requestId, q);
        emit ServiceRequested(requestId, blueprintId, msg.sender, confidentiality);
    }

    /// @notice Approves a request as one of its operators. Only `requestId` is read (security
    ///         commitments, BLS and TEE fields are accepted and ignored locally). The service
    ///         activates when every listed operator approved; service ids count from 0.
    function approveService(ApprovalParams calldata params) external {
        Request storage q = _request(params.requestId);
        _requireRequestOperator(q, params.requestId);
        if (q.approved[msg.sender]) revert AlreadyApproved(params.requestId, msg.sender);
        q.approved[msg.sender] = true;
        q.approvalCount++;
        address manager = _blueprints[q.blueprintId].manager;
        if (manager != address(0)) {
            _bestEffort(manager, abi.encodeCall(IBlueprintServiceManager.onApprove, (msg.sender, params.requestId, 0)));
        }
        emit ServiceApproved(params.requestId, msg.sender);
        if (q.approvalCount == q.operators.length) _activate(q, params.requestId, manager);
    }

    /// @notice Rejects a request as one of its operators; the request is closed.
    function rejectService(uint64 requestId) external {
        Request storage q = _request(requestId);
        _requireRequestOperator(q, requestId);
        q.processed = true;
        address manager = _blueprints[q.blueprintId].manager;
        if (manager != address(0)) {
            _bestEffort(manager, abi.encodeCall(IBlueprintServiceManager.onReject, (msg.sender, requestId)));
        }
        emit ServiceRejected(requestId, msg.sender);
    }

    /// Separate frame: requestService's calldata arguments leave no stack room for the call.
    function _callOnRequest(address manager, uint64 requestId, Request storage q) private {
        IBlueprintServiceManager(manager).onRequest(
            requestId, q.requester, q.operators, q.config, q.ttl, q.paymentToken, q.paymentAmount
        );
    }

    function getServiceRequest(uint64 requestId)
        external
        view
        returns (
            uint64 blueprintId,
            address requester,
            address[] memory operators,
            uint32 approvalCount,
            bool processed,
            bytes memory config
        )
    {
        Request storage q = _request(requestId);
        return (q.blueprintId, q.requester, q.operators, q.approvalCount, q.processed, q.config);
    }

    function _requireRequestOperator(Request storage q, uint64 requestId) private view {
        if (q.processed) revert ServiceRequestAlreadyProcessed(requestId);
        for (uint256 i = 0; i < q.operators.length; i++) {
            if (q.operators[i] == msg.sender) return;
        }
        revert OperatorNotRegistered(q.blueprintId, msg.sender);
    }

    function _activate(Request storage q, uint64 requestId, address manager) private {
        q.processed = true;
        uint64 serviceId = serviceCount++;
        ServiceRecord storage s = _services[serviceId];
        s.exists = true;
        s.requestId = requestId;
        s.info.blueprintId = q.blueprintId;
        s.info.owner = q.requester;
        s.info.createdAt = uint64(block.timestamp);
        s.info.ttl = q.ttl;
        s.info.operatorCount = uint32(q.operators.length);
        s.info.minOperators = uint32(q.operators.length);
        s.info.maxOperators = uint32(q.operators.length);
        s.info.status = 1;
        s.info.confidentiality = q.confidentiality;
        s.operators = q.operators;
        for (uint256 i = 0; i < q.operators.length; i++) {
            s.isOperator[q.operators[i]] = true;
            activeServiceCount[q.blueprintId][q.operators[i]]++;
        }
        s.permitted[q.requester] = true;
        for (uint256 i = 0; i < q.permittedCallers.length; i++) {
            s.permitted[q.permittedCallers[i]] = true;
        }
        emit ServiceActivated(serviceId, requestId, q.blueprintId, q.confidentiality);
        if (manager != address(0)) {
            _bestEffort(
                manager,
                abi.encodeCall(
                    IBlueprintServiceManager.onServiceInitialized,
                    (q.blueprintId, requestId, serviceId, q.requester, q.permittedCallers, q.ttl)
                )
            );
        }
    }

    // ── services ──────────────────────────────────────────────────────────────────────────────

    /// @notice Ends a service (its owner only); onServiceTermination runs best-effort.
    function terminateService(uint64 serviceId) external {
        ServiceRecord storage s = _service(serviceId);
        if (msg.sender != s.info.owner) revert NotServiceOwner(serviceId, msg.sender);
        if (s.info.status != 1) revert ServiceNotActive(serviceId);
        s.info.status = 2;
        s.info.terminatedAt = uint64(block.timestamp);
        for (uint256 i = 0; i < s.operators.length; i++) {
            activeServiceCount[s.info.blueprintId][s.operators[i]]--;
        }
        address manager = _blueprints[s.info.blueprintId].manager;
        if (manager != address(0)) {
            _bestEffort(
                manager, abi.encodeCall(IBlueprintServiceManager.onServiceTermination, (serviceId, s.info.owner))
            );
        }
        emit ServiceTerminated(serviceId);
    }

    /// @notice The service owner adds or removes a permitted caller.
    function setPermittedCaller(uint64 serviceId, address caller, bool permitted) external {
        ServiceRecord storage s = _service(serviceId);
        if (msg.sender != s.info.owner) revert NotServiceOwner(serviceId, msg.sender);
        s.permitted[caller] = permitted;
    }

    function getService(uint64 serviceId) external view returns (Service memory) {
        return _service(serviceId).info;
    }

    function isServiceActive(uint64 serviceId) public view returns (bool) {
        ServiceRecord storage s = _services[serviceId];
        if (!s.exists || s.info.status != 1) return false;
        // service TTL is in seconds, as in the protocol.
        // forge-lint: disable-next-line(block-timestamp)
        return s.info.ttl == 0 || block.timestamp < uint256(s.info.createdAt) + s.info.ttl;
    }

    function isServiceOperator(uint64 serviceId, address operator) external view returns (bool) {
        return _services[serviceId].isOperator[operator];
    }

    function getServiceOperators(uint64 serviceId) external view returns (address[] memory) {
        return _service(serviceId).operators;
    }

    function isPermittedCaller(uint64 serviceId, address caller) external view returns (bool) {
        return _services[serviceId].permitted[caller];
    }

    // ── jobs ──────────────────────────────────────────────────────────────────────────────────

    /// @notice Submits a job; call ids count per service. The call is recorded (so the manager
    ///         can read getJobCall) before onJobCall runs; a revert there reverts the submission.
    function submitJob(uint64 serviceId, uint8 jobIndex, bytes calldata inputs)
        external
        payable
        returns (uint64 callId)
    {
        ServiceRecord storage s = _service(serviceId);
        if (!isServiceActive(serviceId)) revert ServiceNotActive(serviceId);
        if (!s.permitted[msg.sender]) revert NotPermittedCaller(serviceId, msg.sender);
        callId = s.callCount++;
        CallRecord storage c = _calls[serviceId][callId];
        c.exists = true;
        c.inputsHash = keccak256(inputs);
        c.info.jobIndex = jobIndex;
        c.info.caller = msg.sender;
        c.info.createdAt = uint64(block.timestamp);
        c.info.payment = msg.value;
        emit JobSubmitted(serviceId, callId, jobIndex, msg.sender, inputs);
        address manager = _blueprints[s.info.blueprintId].manager;
        if (manager != address(0)) {
            IBlueprintServiceManager(manager).onJobCall(serviceId, jobIndex, callId, inputs);
        }
    }

    function submitResult(uint64 serviceId, uint64 callId, bytes calldata result) external {
        _submitResult(serviceId, callId, result);
    }

    function submitResults(uint64 serviceId, uint64[] calldata callIds, bytes[] calldata results) external {
        if (callIds.length != results.length) revert LengthMismatch();
        for (uint256 i = 0; i < callIds.length; i++) {
            _submitResult(serviceId, callIds[i], results[i]);
        }
    }

    function getJobCall(uint64 serviceId, uint64 callId) external view returns (JobCall memory) {
        return _call(serviceId, callId).info;
    }

    function getJobInputsHash(uint64 serviceId, uint64 callId) external view returns (bytes32) {
        return _call(serviceId, callId).inputsHash;
    }

    function hasSubmittedResult(uint64 serviceId, uint64 callId, address operator) external view returns (bool) {
        return _call(serviceId, callId).submitted[operator];
    }

    function jobCallCount(uint64 serviceId) external view returns (uint64) {
        return _service(serviceId).callCount;
    }

    function _submitResult(uint64 serviceId, uint64 callId, bytes calldata result) private {
        ServiceRecord storage s = _service(serviceId);
        if (!isServiceActive(serviceId)) revert ServiceNotActive(serviceId);
        if (!s.isOperator[msg.sender]) revert OperatorNotInService(serviceId, msg.sender);
        CallRecord storage c = _call(serviceId, callId);
        if (c.info.completed) revert JobAlreadyCompleted(serviceId, callId);
        if (c.submitted[msg.sender]) revert ResultAlreadySubmitted(serviceId, callId, msg.sender);
        uint8 job = c.info.jobIndex;
        address manager = _blueprints[s.info.blueprintId].manager;
        if (manager != address(0) && _askAggregation(manager, serviceId, job)) revert AggregationRequired(serviceId, job);

        c.submitted[msg.sender] = true;
        uint32 count = ++c.info.resultCount;
        emit JobResultSubmitted(serviceId, callId, msg.sender, result);
        uint32 required = 1;
        if (manager != address(0)) {
            _bestEffort(
                manager,
                abi.encodeCall(
                    IBlueprintServiceManager.onJobResult, (serviceId, job, callId, msg.sender, c.inputsHash, result)
                )
            );
            required = _askRequiredCount(manager, serviceId, job, s.info.operatorCount);
        }
        if (count >= required) {
            c.info.completed = true;
            emit JobCompleted(serviceId, callId);
        }
    }
}
