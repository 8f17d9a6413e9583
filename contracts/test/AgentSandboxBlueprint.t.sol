// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BlueprintFixture} from "./BlueprintFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {BlueprintServiceManagerBase} from "../src/tangle/BlueprintServiceManagerBase.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";
import {AgentSandboxJobCodec} from "../src/AgentSandboxJobCodec.sol";
import {AgentSandboxInstances} from "../src/AgentSandboxInstances.sol";

/// Cloud mode, driven through LocalTangle: every hook, view and refusal.
contract AgentSandboxBlueprintCloudTest is BlueprintFixture {
    function setUp() public {
        deployWorld(false, false, 3, 2, "");
    }

    // ── construction and registration ───────────────────────────────────────────────────────

    function test_constructor_flags() public {
        vm.assertFalse(bsm.instanceMode(), "cloud");
        vm.assertFalse(bsm.teeRequired(), "no tee");
        vm.expectRevert(AgentSandboxJobCodec.InvalidModeFlags.selector);
        new AgentSandboxBlueprint(false, true);
        vm.assertEq(bsm.tangleCore(), address(tangle), "tangle");
        vm.assertEq(bsm.blueprintOwner(), DEVELOPER, "owner");
    }

    /// EIP-170: a real chain refuses runtime code over 24,576 bytes.
    function test_codeSizeUnderEip170() public view {
        vm.assertTrue(address(bsm).code.length <= 24_576, "AgentSandboxBlueprint over EIP-170");
        vm.assertTrue(address(tangle).code.length <= 24_576, "LocalTangle over EIP-170");
    }

    function test_onRegister_capacityFromInputsOrDefault() public {
        vm.assertEq(bsm.capacityOf(operatorAt(0)), 2, "explicit");
        register(bp, operatorAt(10), abi.encode(uint32(0)));
        vm.assertEq(bsm.capacityOf(operatorAt(10)), 100, "zero means default");
        register(bp, operatorAt(11), hex"01");
        vm.assertEq(bsm.capacityOf(operatorAt(11)), 100, "short means default");
        stake(operatorAt(12), MIN_STAKE);
        vm.prank(operatorAt(12));
        tangle.registerOperator(bp, fakeKey(12), "http://op12"); // passes OperatorPreferences
        vm.assertEq(bsm.capacityOf(operatorAt(12)), 100, "preferences tuple means default");
        register(bp, operatorAt(13), abi.encode(uint256(7), "extra"));
        vm.assertEq(bsm.capacityOf(operatorAt(13)), 7, "first word read");
        stake(operatorAt(14), MIN_STAKE);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.InvalidCapacity.selector, uint256(1) << 40));
        register(bp, operatorAt(14), abi.encode(uint256(1) << 40));
        // Registered operators count towards the blueprint's free capacity: 3 * 2 + 3 * 100 + 7.
        vm.assertEq(bsm.getAvailableCapacity(), 313, "registered operators counted");
    }

    function test_hooks_onlyFromTangle() public {
        bytes memory err =
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyTangleAllowed.selector, STRANGER, address(tangle));
        vm.startPrank(STRANGER);
        vm.expectRevert(err);
        bsm.onJobCall(sid, 0, 0, "");
        vm.expectRevert(err);
        bsm.onJobResult(sid, 0, 0, STRANGER, bytes32(0), "");
        vm.expectRevert(err);
        bsm.onRegister(STRANGER, "");
        vm.expectRevert(err);
        bsm.onUnregister(STRANGER);
        vm.expectRevert(err);
        bsm.onRequest(0, STRANGER, new address[](0), "", 0, address(0), 0);
        vm.expectRevert(err);
        bsm.onServiceInitialized(0, 0, 0, STRANGER, new address[](0), 0);
        vm.stopPrank();
    }

    function test_serviceInitialized_recordsOwner() public view {
        vm.assertEq(bsm.serviceOwner(sid), USER, "service owner");
        (, bytes32 h) = bsm.getServiceConfigRef(sid);
        vm.assertEq(h, bytes32(0), "no config in cloud mode");
    }

    function test_baseAnswers() public view {
        vm.assertFalse(bsm.requiresAggregation(sid, 0), "no aggregation");
        vm.assertEq(bsm.getRequiredResultCount(sid, 0), 1, "one result");
    }

    // ── create ──────────────────────────────────────────────────────────────────────────────

    function test_create_fullCycle_tupleEncoding() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("sb-1")));
        vm.assertTrue(tangle.isServiceOperator(sid, op), "assigned a service operator");
        (uint32 active, uint32 reserved, uint32 cap) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "not active yet");
        vm.assertEq(reserved, 1, "reserved");
        vm.assertEq(cap, 2, "cap");
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.SandboxCreated(keccak256("sb-1"), op);
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("sb-1", "{\"sidecarUrl\":\"http://127.0.0.1:1\"}"));
        vm.assertTrue(bsm.isSandboxActive("sb-1"), "active");
        vm.assertEq(bsm.getSandboxOperator("sb-1"), op, "operator");
        (active, reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 1, "active");
        vm.assertEq(reserved, 0, "released");
        vm.assertEq(bsm.totalActiveSandboxes(), 1, "total");
        vm.assertEq(bsm.getAvailableCapacity(), 5, "6 slots - 1");
        vm.assertFalse(bsm.canLeave(sid, op), "cannot leave while holding a sandbox");
    }

    function test_create_flatEncoding_andTupleOutput() public {
        (uint64 callId, address op) = submitCreate(USER, flat(abi.encode(createReq("sb-flat"))));
        // Output as a single tuple value: abi.encode((sandboxId, json)).
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encodePacked(bytes32(uint256(0x20)), abi.encode("sb-flat", "{}")));
        vm.assertTrue(bsm.isSandboxActive("sb-flat"), "recorded");
    }

    function test_create_badInputsRefused() public {
        vm.startPrank(USER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 0));
        tangle.submitJob(sid, 0, hex"deadbeef");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 0));
        tangle.submitJob(sid, 0, abi.encode(uint256(0x20), uint256(5)));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 0));
        tangle.submitJob(sid, 0, abi.encode("just a string"));
        AgentSandboxJobCodec.SandboxCreateRequest memory r = createReq("x");
        r.tee_type = 4;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidTeeType.selector, 4));
        tangle.submitJob(sid, 0, abi.encode(r));
        r.tee_type = 0;
        r.tee_required = true;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidTeeType.selector, 0));
        tangle.submitJob(sid, 0, abi.encode(r));
        vm.stopPrank();
        vm.assertEq(tangle.getJobCall(sid, 0).createdAt, 0, "nothing submitted");
    }

    /// Tangle-side bad input around this blueprint: nothing reaches the manager, nothing changes.
    function test_tangleRefusals_leaveBlueprintStateAlone() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("sb")));
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotInService.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.submitResult(sid, callId, abi.encode("sb", "{}"));
        vm.assertFalse(bsm.isSandboxActive("sb"), "a stranger's result records nothing");
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("sb", "{}"));
        address other = op == operatorAt(0) ? operatorAt(1) : operatorAt(0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.JobAlreadyCompleted.selector, sid, callId));
        vm.prank(other);
        tangle.submitResult(sid, callId, abi.encode("sb-2", "{}"));
        vm.expectRevert(abi.encodeWithSelector(ITangle.JobAlreadyCompleted.selector, sid, callId));
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("sb-2", "{}"));
        vm.assertFalse(bsm.isSandboxActive("sb-2"), "late results record nothing");
        vm.assertEq(bsm.totalActiveSandboxes(), 1, "one sandbox");
        vm.expectRevert(abi.encodeWithSelector(ITangle.JobCallNotFound.selector, sid, 99));
        vm.prank(op);
        tangle.submitResult(sid, 99, abi.encode("sb-3", "{}"));
    }

    /// Tangle refuses a job beyond the definition's five before the manager sees it; the
    /// manager's own check stays for a definition that lists more.
    function test_unknownJobIndex_refused() public {
        vm.expectRevert(abi.encodeWithSelector(ITangle.InvalidJobIndex.selector, 5));
        vm.prank(USER);
        tangle.submitJob(sid, 5, "");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxJobCodec.UnknownJob.selector, 5));
        vm.prank(address(tangle));
        bsm.onJobCall(sid, 5, 0, "");
    }

    function test_create_noCapacity_refused() public {
        for (uint256 i = 0; i < 6; i++) {
            submitCreate(USER, abi.encode(createReq("pending")));
        }
        vm.assertEq(bsm.getAvailableCapacity(), 0, "all reserved");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NoOperatorCapacity.selector, sid));
        vm.prank(USER);
        tangle.submitJob(sid, 0, abi.encode(createReq("one too many")));
    }

    function test_createResult_badIdsRecordNothing() public {
        bytes memory long = new bytes(256);
        for (uint256 i = 0; i < long.length; i++) {
            long[i] = "a";
        }
        bytes[4] memory outputs = [abi.encode("", "{}"), abi.encode(string(long), "{}"), hex"1234", abi.encode("dup", "{}")];
        createSandbox(USER, "dup");
        for (uint256 i = 0; i < outputs.length; i++) {
            (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("x")));
            vm.prank(op);
            tangle.submitResult(sid, callId, outputs[i]);
            (, uint32 reserved,) = bsm.getOperatorLoad(op);
            vm.assertEq(reserved, 0, "released");
        }
        vm.assertEq(bsm.totalActiveSandboxes(), 1, "only the first dup");
        bytes memory ok255 = new bytes(255);
        for (uint256 i = 0; i < ok255.length; i++) {
            ok255[i] = "b";
        }
        createSandbox(USER, string(ok255));
        vm.assertTrue(bsm.isSandboxActive(string(ok255)), "255 bytes accepted");
    }

    function test_onJobResult_inputsHashMismatch_recordsNothing() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("sb")));
        vm.prank(address(tangle));
        bsm.onJobResult(sid, 0, callId, op, keccak256("other inputs"), abi.encode("sb", "{}"));
        vm.assertFalse(bsm.isSandboxActive("sb"), "mismatch ignored");
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("sb", "{}"));
        vm.assertTrue(bsm.isSandboxActive("sb"), "the real result still counts");
        bytes32 realHash = keccak256(abi.encode(createReq("sb")));
        vm.prank(address(tangle));
        bsm.onJobResult(sid, 0, callId, op, realHash, abi.encode("sb2", "{}"));
        vm.assertFalse(bsm.isSandboxActive("sb2"), "a closed call records nothing");
    }

    // ── delete ──────────────────────────────────────────────────────────────────────────────

    function test_delete_fullCycle_routedToHolder() public {
        address op = createSandbox(USER, "sb-del");
        vm.prank(USER);
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.OperatorRouted(sid, 1, op);
        uint64 callId = tangle.submitJob(sid, 1, abi.encode("sb-del"));
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.SandboxDeleted(keccak256("sb-del"), op);
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("{}"));
        vm.assertFalse(bsm.isSandboxActive("sb-del"), "inactive");
        vm.assertEq(bsm.getSandboxOperator("sb-del"), address(0), "no operator");
        vm.assertEq(bsm.totalActiveSandboxes(), 0, "total");
        (uint32 active,,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "slot released");
        vm.assertTrue(bsm.canLeave(sid, op), "can leave");
    }

    function test_delete_tupleEncodedId() public {
        createSandbox(USER, "sb-t");
        vm.prank(USER);
        uint64 callId = tangle.submitJob(sid, 1, abi.encodePacked(bytes32(uint256(0x20)), abi.encode("sb-t")));
        vm.prank(bsm.getSandboxOperator("sb-t"));
        tangle.submitResult(sid, callId, abi.encode("{}"));
        vm.assertFalse(bsm.isSandboxActive("sb-t"), "deleted");
    }

    function test_delete_refusals() public {
        createSandbox(USER, "mine");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "nope"));
        vm.prank(USER);
        tangle.submitJob(sid, 1, abi.encode("nope"));
        vm.prank(USER);
        tangle.addPermittedCaller(sid, STRANGER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NotSandboxOwner.selector, STRANGER, USER));
        vm.prank(STRANGER);
        tangle.submitJob(sid, 1, abi.encode("mine"));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidSandboxId.selector));
        vm.prank(USER);
        tangle.submitJob(sid, 1, abi.encode(""));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 1));
        vm.prank(USER);
        tangle.submitJob(sid, 1, hex"00");
        // A second service of the same blueprint cannot delete this one's sandbox.
        uint64 other = newService(bp, USER, ops(1), "");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.SandboxNotInService.selector, other, sid));
        vm.prank(USER);
        tangle.submitJob(other, 1, abi.encode("mine"));
        vm.assertTrue(bsm.isSandboxActive("mine"), "still active");
    }

    function test_deleteResult_fromOtherOperator_recordsNothing() public {
        address op = createSandbox(USER, "sb");
        vm.prank(USER);
        uint64 callId = tangle.submitJob(sid, 1, abi.encode("sb"));
        address other = op == operatorAt(0) ? operatorAt(1) : operatorAt(0);
        vm.prank(other);
        tangle.submitResult(sid, callId, abi.encode("{}"));
        vm.assertTrue(bsm.isSandboxActive("sb"), "still held by its operator");
    }

    function test_idCanBeReusedAfterDelete() public {
        createSandbox(USER, "again");
        deleteSandbox(USER, "again");
        createSandbox(USER, "again");
        vm.assertTrue(bsm.isSandboxActive("again"), "re-created");
        vm.assertEq(bsm.totalActiveSandboxes(), 1, "one");
    }

    // ── leave guards and admin ──────────────────────────────────────────────────────────────

    function test_leaveGuards() public {
        address op = createSandbox(USER, "held");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.OperatorHasActiveSandboxes.selector, op, 1, 0));
        vm.prank(address(tangle));
        bsm.onUnregister(op);
        vm.assertFalse(bsm.canLeave(sid, op), "canLeave false");
        // Termination frees the service's slots: the operator may then leave.
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.assertTrue(bsm.canLeave(sid, op), "can leave after termination");
        uint256 before = bsm.getAvailableCapacity();
        vm.recordLogs();
        vm.prank(op);
        tangle.unregisterOperator(bp);
        vm.assertEq(countLogs(vm.getRecordedLogs(), address(tangle), ITangle.ManagerHookFailed.selector), 0, "accepted");
        vm.assertEq(bsm.getAvailableCapacity(), before - 2, "its slots no longer offered");
    }

    function test_admin_capacitySetters() public {
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyBlueprintOwnerAllowed.selector, STRANGER, DEVELOPER)
        );
        vm.prank(STRANGER);
        bsm.setDefaultCapacity(5);
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyBlueprintOwnerAllowed.selector, STRANGER, DEVELOPER)
        );
        vm.prank(STRANGER);
        bsm.setOperatorCapacity(operatorAt(0), 5);
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.InvalidCapacity.selector, 0));
        vm.prank(DEVELOPER);
        bsm.setDefaultCapacity(0);

        vm.startPrank(DEVELOPER);
        bsm.setOperatorCapacity(operatorAt(0), 10);
        vm.assertEq(bsm.capacityOf(operatorAt(0)), 10, "per-operator");
        bsm.setOperatorCapacity(operatorAt(0), 0);
        vm.assertEq(bsm.capacityOf(operatorAt(0)), 100, "back to default");
        bsm.setDefaultCapacity(7);
        vm.stopPrank();
        vm.assertEq(bsm.defaultCapacity(), 7, "default");
        vm.assertEq(bsm.capacityOf(operatorAt(0)), 7, "follows default");
        vm.assertEq(bsm.getAvailableCapacity(), 7 + 2 + 2, "sum of free");
    }

    // ── workflows ───────────────────────────────────────────────────────────────────────────

    function _createWorkflow(address holder, bytes memory inputs) internal returns (uint64 wid) {
        vm.prank(USER);
        wid = tangle.submitJob(sid, 2, inputs);
        vm.recordLogs();
        vm.prank(holder);
        tangle.submitResult(sid, wid, abi.encode("{}"));
        requireNoHookFailure();
    }

    function test_workflow_createTriggerCancel() public {
        vm.warp(1000);
        address op = createSandbox(USER, "sb-1");
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("sb-1");
        vm.prank(USER);
        uint64 wid = tangle.submitJob(sid, 2, abi.encode(r));
        vm.assertEq(bsm.getWorkflow(sid, wid).created_at, 0, "staged until the result");
        vm.assertEq(bsm.getWorkflowIds(sid, false).length, 0, "not listed yet");
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.WorkflowStored(wid, sid, "nightly", "cron");
        vm.prank(op);
        tangle.submitResult(sid, wid, abi.encode("{}"));
        AgentSandboxBlueprint.Workflow memory w = bsm.getWorkflow(sid, wid);
        vm.assertTrue(w.active, "active");
        vm.assertEq(w.created_at, 1000, "created_at");
        vm.assertEq(w.trigger_config, "0 0 * * *", "fields kept");
        vm.assertEq(w.target_sandbox_id, "sb-1", "target");
        vm.assertEq(w.owner, USER, "owner");
        vm.assertEq(bsm.getWorkflowIds(sid, true).length, 1, "listed");

        vm.warp(2000);
        vm.prank(USER);
        uint64 t = tangle.submitJob(sid, 3, abi.encode(wid));
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.WorkflowTriggered(wid, sid, 2000);
        vm.prank(op);
        tangle.submitResult(sid, t, abi.encode("{}"));
        vm.assertEq(bsm.getWorkflow(sid, wid).last_triggered_at, 2000, "triggered");

        vm.prank(USER);
        uint64 c = tangle.submitJob(sid, 4, abi.encode(wid));
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.WorkflowCanceled(wid, sid);
        vm.prank(op);
        tangle.submitResult(sid, c, abi.encode("{}"));
        vm.assertFalse(bsm.getWorkflow(sid, wid).active, "canceled");
        vm.assertEq(bsm.getWorkflowIds(sid, true).length, 0, "not active");
        vm.assertEq(bsm.getWorkflowIds(sid, false).length, 1, "still listed");

        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.WorkflowNotActive.selector, wid));
        vm.prank(USER);
        tangle.submitJob(sid, 3, abi.encode(wid));
    }

    function test_workflow_flatEncoding() public {
        address op = createSandbox(USER, "sb-2");
        uint64 wid = _createWorkflow(op, flat(abi.encode(workflowReq("sb-2"))));
        vm.assertEq(bsm.getWorkflow(sid, wid).target_sandbox_id, "sb-2", "decoded flat");
    }

    function test_workflow_refusals() public {
        vm.startPrank(USER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownWorkflow.selector, 42));
        tangle.submitJob(sid, 3, abi.encode(uint64(42)));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownWorkflow.selector, 42));
        tangle.submitJob(sid, 4, abi.encode(uint64(42)));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 3));
        tangle.submitJob(sid, 3, abi.encode(uint256(1) << 64));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 4));
        tangle.submitJob(sid, 4, hex"01");
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidWorkflowTarget.selector, 0, 0));
        tangle.submitJob(sid, 2, abi.encode(r));
        r = workflowReq("sb");
        r.target_kind = 1;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidWorkflowTarget.selector, 1, 2));
        tangle.submitJob(sid, 2, abi.encode(r));
        r = workflowReq("sb");
        r.name = "";
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.WorkflowNameRequired.selector));
        tangle.submitJob(sid, 2, abi.encode(r));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxJobCodec.InvalidJobInputs.selector, 2));
        tangle.submitJob(sid, 2, abi.encode(uint256(0x40)));
        vm.stopPrank();
    }

    function test_workflow_idOfAnotherServiceRefused() public {
        address op = createSandbox(USER, "sb");
        uint64 wid = _createWorkflow(op, abi.encode(workflowReq("sb")));
        uint64 other = newService(bp, USER, ops(1), "");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownWorkflow.selector, wid));
        vm.prank(USER);
        tangle.submitJob(other, 3, abi.encode(wid));
    }

    // ── pricing ─────────────────────────────────────────────────────────────────────────────

    function test_pricing_cloud() public view {
        uint256[5] memory expect = [uint256(50), 1, 2, 5, 1];
        for (uint8 j = 0; j < 5; j++) {
            vm.assertEq(bsm.getJobPriceMultiplier(j), expect[j], "multiplier");
        }
        vm.assertEq(bsm.getJobPriceMultiplier(9), 0, "unknown job");
        (uint8[] memory jobs, uint256[] memory rates) = bsm.getDefaultJobRates(10);
        vm.assertEq(jobs.length, 5, "five jobs");
        for (uint256 i = 0; i < 5; i++) {
            vm.assertEq(jobs[i], i, "index");
            vm.assertEq(rates[i], 10 * expect[i], "rate");
        }
    }

    function test_reportProvisioned_refusedInCloudMode() public {
        vm.expectRevert(AgentSandboxInstances.NotInstanceMode.selector);
        vm.prank(operatorAt(0));
        bsm.reportProvisioned(sid, "sb", "http://127.0.0.1:1", 22, "");
    }

    function test_decodeCreateOutput_bothForms() public view {
        (string memory a, string memory j) = bsm.decodeCreateOutput(abi.encode("id-1", "{}"));
        vm.assertEq(a, "id-1", "flat id");
        vm.assertEq(j, "{}", "flat json");
        (a,) = bsm.decodeCreateOutput(abi.encodePacked(bytes32(uint256(0x20)), abi.encode("id-2", "{}")));
        vm.assertEq(a, "id-2", "tuple id");
    }

    function test_checkJobInputs_isTheOnJobCallCheck() public {
        bsm.checkJobInputs(0, abi.encode(createReq("ok")));
        bsm.checkJobInputs(0, flat(abi.encode(createReq("ok"))));
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxJobCodec.UnknownJob.selector, 6));
        bsm.checkJobInputs(6, "");
    }
}
