// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";
import {LocalTangleJobs} from "./LocalTangleJobs.sol";

/// @title LocalTangleServices
/// @notice LocalTangle's service requests, approvals, rejections and terminations, with the real
///         core's checks in its order (ServicesRequests, ServicesApprovals, ServicesLifecycle).
abstract contract LocalTangleServices is LocalTangleJobs {
    uint256 internal constant MAX_PERMITTED_CALLERS_PER_REQUEST = 128;

    /// @notice Requests a service; the caller is the requester (the future owner, always a
    ///         permitted caller). onRequest is a reverting hook.
    function requestService(
        uint64 blueprintId,
        address[] calldata operators,
        bytes calldata config,
        address[] calldata permittedCallers,
        uint64 ttl,
        address paymentToken,
        uint256 paymentAmount,
        ConfidentialityPolicy confidentiality
    ) external payable returns (uint64 requestId) {
        if (operators.length == 0) revert NoOperators();
        if (ttl != 0 && ttl < MIN_SERVICE_TTL) revert TTLBelowMinimum(ttl, MIN_SERVICE_TTL);
        if (ttl > MAX_SERVICE_TTL) revert TTLAboveMaximum(ttl, MAX_SERVICE_TTL);
        address manager = _checkRequestPayment(blueprintId, paymentToken, paymentAmount).info.manager;
        _checkOperators(blueprintId, operators);
        _collectPayment(paymentToken, paymentAmount);
        if (permittedCallers.length > MAX_PERMITTED_CALLERS_PER_REQUEST) {
            revert TooManyPermittedCallers(permittedCallers.length, MAX_PERMITTED_CALLERS_PER_REQUEST);
        }
        // forge-lint: disable-next-line(unsafe-typecast)
        requestId = _storeRequest(blueprintId, uint32(operators.length), ttl, paymentToken, paymentAmount, confidentiality);
        _requests[requestId].operators = operators;
        _requests[requestId].permittedCallers = permittedCallers;
        emit ServiceRequested(requestId, blueprintId, msg.sender, confidentiality);
        if (manager != address(0)) _callOnRequest(manager, requestId, operators, config);
    }

    function _storeRequest(
        uint64 blueprintId,
        uint32 count,
        uint64 ttl,
        address paymentToken,
        uint256 paymentAmount,
        ConfidentialityPolicy confidentiality
    ) private returns (uint64 requestId) {
        BlueprintRecord storage b = _blueprints[blueprintId];
        (uint32 minOps, uint32 maxOps) = _bounds(b, count);
        requestId = _requestCount++;
        _requests[requestId].info = ServiceRequest({
            blueprintId: blueprintId,
            requester: msg.sender,
            createdAt: uint64(block.timestamp),
            ttl: ttl,
            operatorCount: count,
            approvalCount: 0,
            paymentToken: paymentToken,
            paymentAmount: paymentAmount,
            membership: b.info.membership,
            minOperators: minOps,
            maxOperators: maxOps,
            rejected: false,
            confidentiality: confidentiality,
            activated: false
        });
    }

    /// The blueprint is live, the payment fits its pricing, and the manager allows the token.
    function _checkRequestPayment(uint64 blueprintId, address paymentToken, uint256 paymentAmount)
        private
        view
        returns (BlueprintRecord storage b)
    {
        b = _blueprint(blueprintId);
        if (!b.info.active) revert BlueprintNotActive(blueprintId);
        PricingModel pricing = b.info.pricing;
        if (pricing == PricingModel.EventDriven) {
            if (paymentAmount != 0) revert UpfrontPaymentNotAllowedForEventDriven();
            if (paymentToken != address(0)) revert TokenNotAllowed(paymentToken);
        }
        address manager = b.info.manager;
        if (manager != address(0) && !(paymentAmount == 0 && pricing != PricingModel.Subscription)) {
            if (!_assetAllowed(manager, _requestCount, paymentToken)) revert TokenNotAllowed(paymentToken);
        }
    }

    /// Every operator registered for the blueprint and active in staking, none listed twice.
    function _checkOperators(uint64 blueprintId, address[] calldata operators) private view {
        for (uint256 i = 0; i < operators.length; i++) {
            if (_registrations[blueprintId][operators[i]].registeredAt == 0) {
                revert OperatorNotRegistered(blueprintId, operators[i]);
            }
            if (!_staking.isOperatorActive(operators[i])) revert OperatorNotActive(operators[i]);
            for (uint256 j = i + 1; j < operators.length; j++) {
                if (operators[i] == operators[j]) revert InvalidState();
            }
        }
    }

    /// The blueprint's operator bounds (minimum 1 by default, maximum the protocol ceiling).
    function _bounds(BlueprintRecord storage b, uint32 count) private view returns (uint32 minOps, uint32 maxOps) {
        minOps = b.config.minOperators > 0 ? b.config.minOperators : 1;
        if (count < minOps) revert InsufficientOperators(minOps, count);
        maxOps = b.config.maxOperators;
        uint32 effectiveMax = (maxOps == 0 || maxOps > MAX_OPERATORS_PER_SERVICE) ? MAX_OPERATORS_PER_SERVICE : maxOps;
        if (count > effectiveMax) revert TooManyOperators(effectiveMax, count);
    }

    /// Separate frame: requestService's calldata arguments leave no stack room for the call.
    function _callOnRequest(address manager, uint64 requestId, address[] calldata operators, bytes calldata config)
        private
    {
        ServiceRequest storage r = _requests[requestId].info;
        _callManager(
            manager,
            abi.encodeCall(
                IBlueprintServiceManager.onRequest,
                (requestId, r.requester, operators, config, r.ttl, r.paymentToken, r.paymentAmount)
            )
        );
    }

    /// PaymentLib.collectPayment for native payments; an ERC20 one is not supported locally.
    function _collectPayment(address token, uint256 amount) private {
        if (amount == 0) {
            if (msg.value != 0) revert InvalidMsgValue(0, msg.value);
            return;
        }
        if (amount < MINIMUM_PAYMENT_AMOUNT) revert PaymentTooSmall(amount, MINIMUM_PAYMENT_AMOUNT);
        if (token != address(0)) revert TokenNotAllowed(token);
        if (msg.value != amount) revert InvalidMsgValue(amount, msg.value);
    }

    /// @notice Approves a request as one of its operators; the last approval activates the
    ///         service. Security commitments are recorded only as the staking percent onApprove
    ///         gets (no requirements exist locally); BLS keys and TEE commitments are refused.
    function approveService(ApprovalParams calldata p) external {
        RequestRecord storage q = _request(p.requestId);
        if (q.info.rejected) revert ServiceRequestAlreadyProcessed(p.requestId);
        if (!_staking.isOperatorActive(msg.sender)) revert OperatorNotActive(msg.sender);
        if (!_isRequestOperator(q)) revert Unauthorized();
        if (q.approved[msg.sender]) revert AlreadyApproved(p.requestId, msg.sender);
        _requireNotExpired(q, p.requestId);
        if (p.teeCommitments.length > 0) revert LocalUnsupported("tee commitments");
        if ((p.blsPubkey[0] | p.blsPubkey[1] | p.blsPubkey[2] | p.blsPubkey[3]) != 0) revert LocalUnsupported("bls");
        uint8 stakingPercent = 100;
        if (p.securityCommitments.length > 0) {
            uint16 minBps = type(uint16).max;
            for (uint256 i = 0; i < p.securityCommitments.length; i++) {
                if (p.securityCommitments[i].exposureBps < minBps) minBps = p.securityCommitments[i].exposureBps;
            }
            // minBps / 100 <= 655 only fits uint8 for a sane exposure, as in the real core.
            // forge-lint: disable-next-line(unsafe-typecast)
            stakingPercent = uint8(minBps / 100);
        }
        q.approved[msg.sender] = true;
        q.info.approvalCount++;
        emit ServiceApproved(p.requestId, msg.sender);
        address manager = _managerOf(q.info.blueprintId);
        if (manager != address(0)) {
            _tryCallManager(
                manager, abi.encodeCall(IBlueprintServiceManager.onApprove, (msg.sender, p.requestId, stakingPercent))
            );
        }
        if (q.info.approvalCount == q.info.operatorCount) _activate(q, p.requestId, manager);
    }

    /// @notice Rejects a request as one of its operators: it can never activate; the requester's
    ///         payment is refunded. onReject is best-effort.
    function rejectService(uint64 requestId) external {
        RequestRecord storage q = _request(requestId);
        if (q.info.rejected) revert ServiceRequestAlreadyProcessed(requestId);
        _requireNotExpired(q, requestId);
        if (!_staking.isOperatorActive(msg.sender)) revert OperatorNotActive(msg.sender);
        if (!_isRequestOperator(q)) revert Unauthorized();
        q.info.rejected = true;
        uint256 refund = q.info.paymentAmount;
        if (refund > 0) {
            (bool ok,) = payable(q.info.requester).call{value: refund}("");
            if (!ok) revert PaymentFailed();
        }
        emit ServiceRejected(requestId, msg.sender);
        address manager = _managerOf(q.info.blueprintId);
        if (manager != address(0)) {
            _tryCallManager(manager, abi.encodeCall(IBlueprintServiceManager.onReject, (msg.sender, requestId)));
        }
    }

    function _requireNotExpired(RequestRecord storage q, uint64 requestId) private view {
        if (q.info.activated) revert ServiceRequestAlreadyProcessed(requestId);
        // forge-lint: disable-next-line(block-timestamp)
        if (block.timestamp > uint256(q.info.createdAt) + REQUEST_EXPIRY_GRACE_PERIOD) {
            revert ServiceRequestExpiredError(requestId);
        }
    }

    function _isRequestOperator(RequestRecord storage q) private view returns (bool) {
        for (uint256 i = 0; i < q.operators.length; i++) {
            if (q.operators[i] == msg.sender) return true;
        }
        return false;
    }

    function _activate(RequestRecord storage q, uint64 requestId, address manager) private {
        q.info.activated = true;
        uint64 serviceId = _serviceCount++;
        ServiceRecord storage s = _services[serviceId];
        ServiceRequest storage r = q.info;
        s.info = Service({
            blueprintId: r.blueprintId,
            owner: r.requester,
            createdAt: uint64(block.timestamp),
            ttl: r.ttl,
            terminatedAt: 0,
            lastPaymentAt: uint64(block.timestamp),
            operatorCount: r.operatorCount,
            minOperators: r.minOperators,
            maxOperators: r.maxOperators,
            membership: r.membership,
            pricing: _blueprints[r.blueprintId].info.pricing,
            status: ServiceStatus.Active,
            confidentiality: r.confidentiality
        });
        s.operators = q.operators;
        for (uint256 i = 0; i < q.operators.length; i++) {
            s.isOperator[q.operators[i]] = true;
            _activeServices[r.blueprintId][q.operators[i]]++;
        }
        // The permitted callers, and the list onServiceInitialized gets: the requester first.
        address[] memory callers = new address[](q.permittedCallers.length + 1);
        callers[0] = r.requester;
        s.permitted[r.requester] = true;
        for (uint256 i = 0; i < q.permittedCallers.length; i++) {
            callers[i + 1] = q.permittedCallers[i];
            s.permitted[q.permittedCallers[i]] = true;
        }
        emit ServiceActivated(serviceId, requestId, r.blueprintId, r.confidentiality);
        if (manager != address(0)) {
            _tryCallManager(
                manager,
                abi.encodeCall(
                    IBlueprintServiceManager.onServiceInitialized,
                    (r.blueprintId, requestId, serviceId, r.requester, callers, r.ttl)
                )
            );
        }
    }

    /// Unknown ids answer a zero struct, as on the real router.
    function getServiceRequest(uint64 requestId) external view returns (ServiceRequest memory) {
        return _requests[requestId].info;
    }

    // ── services ──────────────────────────────────────────────────────────────────────────────

    /// @notice Ends a service (its owner only). ServiceTerminated is emitted before the
    ///         best-effort onServiceTermination.
    function terminateService(uint64 serviceId) external {
        ServiceRecord storage s = _service(serviceId);
        if (s.info.owner != msg.sender) revert NotServiceOwner(serviceId, msg.sender);
        if (s.info.status != ServiceStatus.Active) revert ServiceNotActive(serviceId);
        s.info.status = ServiceStatus.Terminated;
        s.info.terminatedAt = uint64(block.timestamp);
        uint64 blueprintId = s.info.blueprintId;
        for (uint256 i = 0; i < s.operators.length; i++) {
            if (_activeServices[blueprintId][s.operators[i]] > 0) _activeServices[blueprintId][s.operators[i]]--;
        }
        emit ServiceTerminated(serviceId);
        address manager = _managerOf(blueprintId);
        if (manager != address(0)) {
            _tryCallManager(
                manager, abi.encodeCall(IBlueprintServiceManager.onServiceTermination, (serviceId, s.info.owner))
            );
        }
    }

    function addPermittedCaller(uint64 serviceId, address caller) external {
        ServiceRecord storage s = _service(serviceId);
        if (s.info.owner != msg.sender) revert NotServiceOwner(serviceId, msg.sender);
        s.permitted[caller] = true;
    }

    function removePermittedCaller(uint64 serviceId, address caller) external {
        ServiceRecord storage s = _service(serviceId);
        if (s.info.owner != msg.sender) revert NotServiceOwner(serviceId, msg.sender);
        s.permitted[caller] = false;
    }

    function getService(uint64 serviceId) external view returns (Service memory) {
        return _services[serviceId].info;
    }

    /// Status only, as on the real router: an expired TTL does not make a service inactive here
    /// (submitJob and submitResult refuse it with ServiceExpired).
    function isServiceActive(uint64 serviceId) external view returns (bool) {
        return _services[serviceId].info.status == ServiceStatus.Active;
    }

    function isServiceOperator(uint64 serviceId, address operator) external view returns (bool) {
        return _services[serviceId].isOperator[operator];
    }

    function getServiceOperators(uint64 serviceId) external view returns (address[] memory) {
        return _services[serviceId].operators;
    }

    function isPermittedCaller(uint64 serviceId, address caller) external view returns (bool) {
        return _services[serviceId].permitted[caller];
    }
}
