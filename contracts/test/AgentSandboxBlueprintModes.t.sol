// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {BlueprintFixture} from "./BlueprintFixture.sol";
import {Vm} from "./TestBase.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";
import {AgentSandboxJobCodec} from "../src/AgentSandboxJobCodec.sol";
import {AgentSandboxInstances} from "../src/AgentSandboxInstances.sol";

/// Instance mode: the service is one sandbox per operator, described by the request's config.
contract AgentSandboxBlueprintInstanceTest is BlueprintFixture {
    bytes internal config;

    function setUp() public {
        config = abi.encode(createReq("instance"));
        deployWorld(true, false, 2, 0, config);
    }

    function test_flags() public view {
        vm.assertTrue(bsm.instanceMode(), "instance");
        vm.assertFalse(bsm.teeRequired(), "no tee");
    }

    function test_configMovesToService_andOwnerRecorded() public view {
        (uint64 rid, bytes32 h) = bsm.getServiceConfigRef(sid);
        vm.assertEq(rid, 0, "its request");
        vm.assertEq(h, keccak256(config), "config hash kept");
        vm.assertEq(bsm.serviceOwner(sid), USER, "owner");
    }

    function test_flatConfigAccepted() public {
        bytes memory flatConfig = flat(abi.encode(createReq("flat")));
        vm.recordLogs();
        uint64 s2 = newService(bp, USER, ops(1), flatConfig);
        (, bytes32 h) = bsm.getServiceConfigRef(s2);
        vm.assertEq(h, keccak256(flatConfig), "flat config kept as given");
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bytes memory emitted;
        for (uint256 i = 0; i < logs.length; i++) {
            if (logs[i].topics[0] == AgentSandboxInstances.ServiceConfigRequested.selector) {
                emitted = abi.decode(logs[i].data, (bytes));
            }
        }
        vm.assertEq(emitted, flatConfig, "the event carries the config");
    }

    function test_badConfigRefusesRequest() public {
        vm.startPrank(USER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxInstances.InvalidServiceConfig.selector));
        tangle.requestService(bp, ops(1), hex"0badc0de", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxInstances.InvalidServiceConfig.selector));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        AgentSandboxJobCodec.SandboxCreateRequest memory r = createReq("bad tee");
        r.tee_type = 9;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidTeeType.selector, 9));
        tangle.requestService(bp, ops(1), abi.encode(r), new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        vm.stopPrank();
    }

    function test_sandboxJobsRefused() public {
        bytes memory create = abi.encode(createReq("x"));
        vm.startPrank(USER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.JobNotInInstanceMode.selector, 0));
        tangle.submitJob(sid, 0, create);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.JobNotInInstanceMode.selector, 1));
        tangle.submitJob(sid, 1, abi.encode("x"));
        vm.stopPrank();
    }

    function test_pricing_instance() public view {
        vm.assertEq(bsm.getJobPriceMultiplier(0), 0, "create unavailable");
        vm.assertEq(bsm.getJobPriceMultiplier(1), 0, "delete unavailable");
        vm.assertEq(bsm.getJobPriceMultiplier(3), 5, "trigger");
        (uint8[] memory jobs, uint256[] memory rates) = bsm.getDefaultJobRates(3);
        vm.assertEq(jobs.length, 3, "workflow jobs only");
        vm.assertEq(jobs[0], 2, "first = WORKFLOW_CREATE");
        vm.assertEq(rates[0], 6, "2 * 3");
        vm.assertEq(rates[1], 15, "5 * 3");
        vm.assertEq(rates[2], 3, "1 * 3");
    }

    function test_provisionCycle() public {
        address op = operatorAt(0);
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxInstances.OperatorProvisioned(sid, op, "inst-1", "http://127.0.0.1:7000");
        vm.prank(op);
        bsm.reportProvisioned(sid, "inst-1", "http://127.0.0.1:7000", 2222, "");
        vm.assertTrue(bsm.isOperatorProvisioned(sid, op), "provisioned");
        vm.assertEq(bsm.getAttestationHash(sid, op), bytes32(0), "no attestation");
        (address[] memory who, string[] memory urls) = bsm.getOperatorEndpoints(sid);
        vm.assertEq(who.length, 1, "one endpoint");
        vm.assertEq(who[0], op, "operator");
        vm.assertEq(urls[0], "http://127.0.0.1:7000", "url");
        vm.assertFalse(bsm.canLeave(sid, op), "cannot leave while provisioned");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.OperatorHasActiveSandboxes.selector, op, 0, 1));
        vm.prank(address(tangle));
        bsm.onUnregister(op);

        vm.expectRevert(abi.encodeWithSelector(AgentSandboxInstances.AlreadyProvisioned.selector, sid, op));
        vm.prank(op);
        bsm.reportProvisioned(sid, "inst-1", "http://127.0.0.1:7000", 2222, "");

        vm.prank(operatorAt(1));
        bsm.reportProvisioned(sid, "inst-2", "http://127.0.0.1:7001", 0, "{\"kind\":\"none\"}");
        vm.assertEq(bsm.getAttestationHash(sid, operatorAt(1)), keccak256("{\"kind\":\"none\"}"), "hash kept");

        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxInstances.OperatorDeprovisioned(sid, op);
        vm.prank(op);
        bsm.reportDeprovisioned(sid);
        vm.assertFalse(bsm.isOperatorProvisioned(sid, op), "deprovisioned");
        (who,) = bsm.getOperatorEndpoints(sid);
        vm.assertEq(who.length, 1, "one left");
        vm.assertEq(who[0], operatorAt(1), "the other");
        vm.assertTrue(bsm.canLeave(sid, op), "can leave");
        vm.prank(address(tangle));
        bsm.onUnregister(op);
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxInstances.NotProvisioned.selector, sid, op));
        vm.prank(op);
        bsm.reportDeprovisioned(sid);
    }

    function test_provision_refusals() public {
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxInstances.NotServiceOperator.selector, sid, STRANGER));
        vm.prank(STRANGER);
        bsm.reportProvisioned(sid, "inst", "http://x", 0, "");
        vm.startPrank(operatorAt(0));
        vm.expectRevert(AgentSandboxJobCodec.InvalidSandboxId.selector);
        bsm.reportProvisioned(sid, "", "http://x", 0, "");
        vm.expectRevert(AgentSandboxInstances.InvalidEndpoint.selector);
        bsm.reportProvisioned(sid, "inst", "", 0, "");
        vm.stopPrank();
    }

    function test_workflowsTargetTheInstance() public {
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("");
        vm.prank(USER);
        uint64 wid = tangle.submitJob(sid, 2, abi.encode(r));
        vm.prank(operatorAt(1));
        tangle.submitResult(sid, wid, abi.encode("{}"));
        vm.assertTrue(bsm.getWorkflow(sid, wid).active, "stored");
        vm.assertEq(bsm.getWorkflow(sid, wid).target_kind, 1, "instance target");
        // Only the service owner may put a workflow on the instance.
        vm.prank(USER);
        tangle.addPermittedCaller(sid, STRANGER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NotSandboxOwner.selector, STRANGER, USER));
        vm.prank(STRANGER);
        tangle.submitJob(sid, 2, abi.encode(r));
        r.target_sandbox_id = "sb";
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidWorkflowTarget.selector, 1, 2));
        vm.prank(USER);
        tangle.submitJob(sid, 2, abi.encode(r));
        r.target_sandbox_id = "";
        r.target_kind = 0;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidWorkflowTarget.selector, 0, 0));
        vm.prank(USER);
        tangle.submitJob(sid, 2, abi.encode(r));
    }
}

/// TEE instance mode: an attestation is mandatory, and the instance spec must ask for TEE.
contract AgentSandboxBlueprintTeeTest is BlueprintFixture {
    function teeConfig() internal pure returns (bytes memory) {
        AgentSandboxJobCodec.SandboxCreateRequest memory r = createReq("tee");
        r.tee_required = true;
        r.tee_type = 1;
        r.attestation_nonce = "nonce-1";
        return abi.encode(r);
    }

    function setUp() public {
        deployWorld(true, true, 1, 0, teeConfig());
    }

    function test_flags() public view {
        vm.assertTrue(bsm.instanceMode(), "instance");
        vm.assertTrue(bsm.teeRequired(), "tee");
    }

    function test_attestationRequired() public {
        vm.expectRevert(AgentSandboxInstances.AttestationRequired.selector);
        vm.prank(operatorAt(0));
        bsm.reportProvisioned(sid, "tee-1", "http://127.0.0.1:7000", 0, "");
    }

    function test_attestationStored() public {
        string memory att = "{\"tdx\":\"quote\"}";
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxInstances.TeeAttestationStored(sid, operatorAt(0), keccak256(bytes(att)));
        vm.prank(operatorAt(0));
        bsm.reportProvisioned(sid, "tee-1", "http://127.0.0.1:7000", 0, att);
        vm.assertEq(bsm.getAttestationHash(sid, operatorAt(0)), keccak256(bytes(att)), "hash");
    }

    function test_nonTeeConfigRefused() public {
        bytes memory plain = abi.encode(createReq("plain"));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.TeeRequired.selector));
        vm.prank(USER);
        tangle.requestService(bp, ops(1), plain, new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
    }
}
