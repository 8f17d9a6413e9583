// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBlueprintServiceManager} from "./IBlueprintServiceManager.sol";
import {LocalTangleState} from "./LocalTangleState.sol";

/// @title LocalTangleJobs
/// @notice LocalTangle's job submission and results, with the real core's checks in its order
///         (JobsSubmission): onJobCall is a reverting hook (wrapped in ManagerReverted),
///         onJobResult a best-effort one, and both run under the manager hook gas cap.
abstract contract LocalTangleJobs is LocalTangleState {
    /// @notice Submits a job; call ids count per service. The call is recorded (so the manager
    ///         can read getJobCall) and JobSubmitted emitted before onJobCall runs.
    function submitJob(uint64 serviceId, uint8 jobIndex, bytes calldata inputs)
        external
        payable
        returns (uint64 callId)
    {
        ServiceRecord storage s = _service(serviceId);
        _requireLive(s, serviceId);
        if (!s.permitted[msg.sender]) revert NotPermittedCaller(serviceId, msg.sender);
        BlueprintRecord storage b = _blueprints[s.info.blueprintId];
        uint256 payment = 0;
        // Only EventDriven services take a per-job payment; any other service keeps msg.value
        // without recording it, as the real router does.
        if (s.info.pricing == PricingModel.EventDriven) {
            payment = b.config.eventRate;
            if (payment > 0 && !_assetAllowed(b.info.manager, serviceId, address(0))) revert TokenNotAllowed(address(0));
            if (msg.value != payment) revert InvalidMsgValue(payment, msg.value);
        }
        if (jobIndex >= b.jobCount) revert InvalidJobIndex(jobIndex);
        callId = s.callCount++;
        CallRecord storage c = _calls[serviceId][callId];
        c.info = JobCall({
            jobIndex: jobIndex,
            caller: msg.sender,
            createdAt: uint64(block.timestamp),
            resultCount: 0,
            completed: false,
            isRFQ: false,
            payment: payment
        });
        c.inputsHash = keccak256(inputs);
        emit JobSubmitted(serviceId, callId, jobIndex, msg.sender, inputs);
        if (b.info.manager != address(0)) {
            _callManager(
                b.info.manager, abi.encodeCall(IBlueprintServiceManager.onJobCall, (serviceId, jobIndex, callId, inputs))
            );
        }
    }

    function submitResult(uint64 serviceId, uint64 callId, bytes calldata output) external {
        ServiceRecord storage s = _service(serviceId);
        _submitResult(s, serviceId, callId, _call(serviceId, callId), output);
    }

    function submitResults(uint64 serviceId, uint64[] calldata callIds, bytes[] calldata outputs) external {
        if (callIds.length != outputs.length) revert LengthMismatch();
        ServiceRecord storage s = _service(serviceId);
        for (uint256 i = 0; i < callIds.length; i++) {
            _submitResult(s, serviceId, callIds[i], _call(serviceId, callIds[i]), outputs[i]);
        }
    }

    /// Unknown ids answer a zero struct, as on the real router.
    function getJobCall(uint64 serviceId, uint64 callId) external view returns (JobCall memory) {
        return _calls[serviceId][callId].info;
    }

    function _requireLive(ServiceRecord storage s, uint64 serviceId) private view {
        if (s.info.status != ServiceStatus.Active) revert ServiceNotActive(serviceId);
        // service TTL is in seconds, as in the protocol.
        // forge-lint: disable-next-line(block-timestamp)
        if (s.info.ttl > 0 && block.timestamp > uint256(s.info.createdAt) + s.info.ttl) revert ServiceExpired(serviceId);
    }

    function _submitResult(
        ServiceRecord storage s,
        uint64 serviceId,
        uint64 callId,
        CallRecord storage c,
        bytes calldata output
    ) private {
        _requireLive(s, serviceId);
        uint8 job = c.info.jobIndex;
        address manager = _managerOf(s.info.blueprintId);
        if (manager != address(0)) {
            // Fails closed: no answer means "aggregation required".
            (bool ok, bytes memory ret) = _tryStaticcallManager(
                manager, abi.encodeCall(IBlueprintServiceManager.requiresAggregation, (serviceId, job)), 32
            );
            if (!ok || abi.decode(ret, (bool))) revert AggregationRequired(serviceId, job);
        }
        if (!s.isOperator[msg.sender]) revert OperatorNotInService(serviceId, msg.sender);
        if (!_staking.isOperatorActive(msg.sender)) revert OperatorNotActive(msg.sender);
        if (c.info.completed) revert JobAlreadyCompleted(serviceId, callId);
        if (c.submitted[msg.sender]) revert ResultAlreadySubmitted(serviceId, callId, msg.sender);
        c.submitted[msg.sender] = true;
        c.info.resultCount++;
        if (manager != address(0)) {
            _tryCallManager(
                manager,
                abi.encodeCall(
                    IBlueprintServiceManager.onJobResult, (serviceId, job, callId, msg.sender, c.inputsHash, output)
                )
            );
        }
        emit JobResultSubmitted(serviceId, callId, msg.sender, output);
        // 1 unless the manager answers; an answer of 0 completes on the first result.
        uint32 required = 1;
        if (manager != address(0)) {
            (bool ok, bytes memory ret) = _tryStaticcallManager(
                manager, abi.encodeCall(IBlueprintServiceManager.getRequiredResultCount, (serviceId, job)), 32
            );
            if (ok) required = abi.decode(ret, (uint32));
        }
        if (c.info.resultCount < required || c.info.completed) return;
        c.info.completed = true;
        emit JobCompleted(serviceId, callId);
    }

    /// queryIsPaymentAssetAllowed, failing closed (no answer: not allowed).
    function _assetAllowed(address manager, uint64 contextId, address asset) internal view returns (bool) {
        if (manager == address(0)) return true;
        (bool ok, bytes memory ret) = _tryStaticcallManager(
            manager, abi.encodeCall(IBlueprintServiceManager.queryIsPaymentAssetAllowed, (contextId, asset)), 32
        );
        return ok && abi.decode(ret, (bool));
    }
}
