// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vm} from "./TestBase.sol";
import {TangleFixture} from "./TangleFixture.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";
import {AgentSandboxJobCodec} from "../src/AgentSandboxJobCodec.sol";

/// A LocalTangle with the AgentSandboxBlueprint as a blueprint's manager, and job helpers.
abstract contract BlueprintFixture is TangleFixture {
    AgentSandboxBlueprint internal bsm;
    uint64 internal bp;
    uint64 internal sid;

    /// Deploys the world: `n` operators with `capacity` each (0 = default), one service of all.
    function deployWorld(bool instanceMode, bool tee, uint256 n, uint32 capacity, bytes memory config) internal {
        tangle = newTangle();
        bsm = new AgentSandboxBlueprint(instanceMode, tee);
        bp = newBlueprint(address(bsm));
        for (uint256 i = 0; i < n; i++) {
            register(bp, operatorAt(i), capacity == 0 ? bytes("") : abi.encode(capacity));
        }
        vm.recordLogs();
        sid = newService(bp, USER, ops(n), config);
        requireNoHookFailure();
        vm.assertEq(bsm.serviceOwner(sid), USER, "onServiceInitialized ran");
    }

    /// Best-effort hooks must fit their gas cap: no ManagerHookFailed since recordLogs.
    function requireNoHookFailure() internal {
        vm.assertEq(countLogs(vm.getRecordedLogs(), address(tangle), ITangle.ManagerHookFailed.selector), 0, "hook failed");
    }

    function createReq(string memory name) internal pure returns (AgentSandboxJobCodec.SandboxCreateRequest memory r) {
        r.name = name;
        r.image = "agent-sandbox:test";
        r.stack = "default";
        r.env_json = "{}";
        r.metadata_json = "{}";
        r.max_lifetime_seconds = 3600;
        r.idle_timeout_seconds = 600;
        r.cpu_cores = 1;
        r.memory_mb = 512;
        r.disk_gb = 1;
        r.capabilities_json = "{}";
    }

    function workflowReq(string memory target) internal view returns (AgentSandboxJobCodec.WorkflowCreateRequest memory r) {
        r.name = "nightly";
        r.workflow_json = "{\"steps\":[]}";
        r.trigger_type = "cron";
        r.trigger_config = "0 0 * * *";
        r.sandbox_config_json = "{}";
        r.target_kind = bsm.instanceMode() ? 1 : 0;
        r.target_sandbox_id = target;
    }

    /// The flat encoding of a value whose `abi.encode` is a single dynamic tuple: drop the 0x20.
    function flat(bytes memory tupleEncoding) internal pure returns (bytes memory out) {
        out = new bytes(tupleEncoding.length - 32);
        for (uint256 i = 0; i < out.length; i++) {
            out[i] = tupleEncoding[i + 32];
        }
    }

    /// Submits a create as `caller`; returns the call id and the operator it was assigned to.
    function submitCreate(address caller, bytes memory inputs) internal returns (uint64 callId, address assigned) {
        vm.recordLogs();
        vm.prank(caller);
        callId = tangle.submitJob(sid, 0, inputs);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i = 0; i < logs.length; i++) {
            if (logs[i].emitter == address(bsm) && logs[i].topics[0] == AgentSandboxBlueprint.OperatorAssigned.selector) {
                assigned = address(uint160(uint256(logs[i].topics[3])));
            }
        }
        require(assigned != address(0), "no OperatorAssigned");
    }

    /// Full create: job, then the assigned operator's result `(sandboxId, json)`.
    function createSandbox(address caller, string memory id) internal returns (address op) {
        uint64 callId;
        (callId, op) = submitCreate(caller, abi.encode(createReq(id)));
        vm.recordLogs();
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode(id, "{\"sandboxId\":\"x\"}"));
        requireNoHookFailure();
    }

    function deleteSandbox(address caller, string memory id) internal returns (uint64 callId) {
        vm.prank(caller);
        callId = tangle.submitJob(sid, 1, abi.encode(id));
        address op = bsm.getSandboxOperator(id);
        vm.recordLogs();
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("{}"));
        requireNoHookFailure();
    }
}
