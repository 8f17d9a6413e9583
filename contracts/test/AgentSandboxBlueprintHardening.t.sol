// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vm} from "./TestBase.sol";
import {BlueprintFixture} from "./BlueprintFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";
import {AgentSandboxJobCodec} from "../src/AgentSandboxJobCodec.sol";

/// The holes of issue 10, each as an attacker (or an unlucky user) would meet it: workflows on
/// another tenant's sandbox, results from an operator that was not chosen, capacity that never
/// comes back, and create gas that depends on the random pick.
contract AgentSandboxBlueprintHardeningTest is BlueprintFixture {
    function setUp() public {
        deployWorld(false, false, 3, 2, "");
        vm.prank(USER);
        tangle.addPermittedCaller(sid, STRANGER);
    }

    function _other(address op) internal pure returns (address) {
        return op == operatorAt(0) ? operatorAt(1) : operatorAt(0);
    }

    // ── 1. workflows ────────────────────────────────────────────────────────────────────────

    function test_workflowCreate_onAnotherUsersSandbox_reverts() public {
        createSandbox(USER, "victim");
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("victim");
        r.workflow_json = "{\"command\":\"env > /tmp/stolen\"}";
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NotSandboxOwner.selector, STRANGER, USER));
        vm.prank(STRANGER);
        tangle.submitJob(sid, 2, abi.encode(r));
    }

    function test_workflowCreate_targetMustBeLiveInThisService() public {
        bytes memory nobody = abi.encode(workflowReq("nobody"));
        bytes memory mine = abi.encode(workflowReq("mine"));
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "nobody"));
        vm.prank(USER);
        tangle.submitJob(sid, 2, nobody);
        createSandbox(USER, "mine");
        uint64 other = newService(bp, USER, ops(1), "");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.SandboxNotInService.selector, other, sid));
        vm.prank(USER);
        tangle.submitJob(other, 2, mine);
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("mine");
        r.target_service_id = sid + 7;
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.SandboxNotInService.selector, sid, sid + 7));
        vm.prank(USER);
        tangle.submitJob(sid, 2, abi.encode(r));
        deleteSandbox(USER, "mine");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "mine"));
        vm.prank(USER);
        tangle.submitJob(sid, 2, mine);
    }

    function test_workflowTriggerAndCancel_onlyByItsOwner() public {
        address op = createSandbox(USER, "sb");
        bytes memory inputs = abi.encode(workflowReq("sb"));
        vm.prank(USER);
        uint64 wid = tangle.submitJob(sid, 2, inputs);
        vm.prank(op);
        tangle.submitResult(sid, wid, abi.encode("{}"));
        bytes memory err = abi.encodeWithSelector(AgentSandboxBlueprint.NotWorkflowOwner.selector, STRANGER, USER);
        expectManagerRevert(address(bsm), err);
        vm.prank(STRANGER);
        tangle.submitJob(sid, 3, abi.encode(wid));
        expectManagerRevert(address(bsm), err);
        vm.prank(STRANGER);
        tangle.submitJob(sid, 4, abi.encode(wid));
        vm.prank(USER);
        tangle.submitJob(sid, 3, abi.encode(wid)); // the owner may
    }

    function test_workflowResult_onlyFromTheSandboxHolder() public {
        address op = createSandbox(USER, "sb");
        bytes memory inputs = abi.encode(workflowReq("sb"));
        vm.prank(USER);
        uint64 wid = tangle.submitJob(sid, 2, inputs);
        vm.prank(_other(op));
        tangle.submitResult(sid, wid, abi.encode("{}"));
        vm.assertFalse(bsm.getWorkflow(sid, wid).active, "a co-operator's result stores nothing");
        vm.prank(op);
        bsm.settleCall(sid, wid, abi.encode("{}"));
        vm.assertTrue(bsm.getWorkflow(sid, wid).active, "the holder settles it");
    }

    /// Call ids restart per service: the same id in two services names two workflows.
    function test_workflows_twoServicesSameCallId() public {
        uint64 first = sid;
        uint64 second = newService(bp, USER, ops(3), "");
        address a = createSandbox(USER, "in-first"); // call 0 of the first service
        sid = second;
        address b = createSandbox(USER, "in-second"); // call 0 of the second service
        AgentSandboxJobCodec.WorkflowCreateRequest memory r = workflowReq("in-first");
        r.name = "first";
        vm.prank(USER);
        uint64 w1 = tangle.submitJob(first, 2, abi.encode(r));
        r = workflowReq("in-second");
        r.name = "second";
        vm.prank(USER);
        uint64 w2 = tangle.submitJob(second, 2, abi.encode(r));
        vm.assertEq(w1, w2, "same call id");
        vm.prank(a);
        tangle.submitResult(first, w1, abi.encode("{}"));
        vm.prank(b);
        tangle.submitResult(second, w2, abi.encode("{}"));
        vm.assertEq(bsm.getWorkflow(first, w1).name, "first", "first kept");
        vm.assertEq(bsm.getWorkflow(second, w2).name, "second", "second kept");
        vm.assertEq(bsm.getWorkflow(first, w1).target_sandbox_id, "in-first", "not overwritten");
        vm.assertEq(bsm.getWorkflowIds(first, true).length, 1, "one in the first");
        vm.assertEq(bsm.getWorkflowIds(second, true).length, 1, "one in the second");
    }

    // ── 2. results from an operator that was not chosen ─────────────────────────────────────

    function test_createResult_fromCoOperator_changesNothing_thenAssignedSettles() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("sb")));
        address other = _other(op);
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.ResultIgnored(sid, callId, other);
        vm.prank(other);
        tangle.submitResult(sid, callId, abi.encode("sb", "{}"));
        vm.assertTrue(tangle.getJobCall(sid, callId).completed, "tangle completed it anyway");
        (uint32 active, uint32 reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(reserved, 1, "the reservation is kept");
        vm.assertEq(active, 0, "nothing recorded");
        vm.assertFalse(bsm.isSandboxActive("sb"), "not recorded");
        // The assigned operator meets JobAlreadyCompleted and settles through the blueprint.
        vm.expectRevert(abi.encodeWithSelector(ITangle.JobAlreadyCompleted.selector, sid, callId));
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("sb-real", "{}"));
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NotChosenOperator.selector, sid, callId, other));
        vm.prank(other);
        bsm.settleCall(sid, callId, abi.encode("sb-real", "{}"));
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.CallSettled(sid, callId, op, abi.encode("sb-real", "{}"));
        vm.prank(op);
        bsm.settleCall(sid, callId, abi.encode("sb-real", "{}"));
        vm.assertEq(bsm.getSandboxOperator("sb-real"), op, "recorded for its owner");
        (active, reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 1, "active once");
        vm.assertEq(reserved, 0, "released once");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NotChosenOperator.selector, sid, callId, op));
        vm.prank(op);
        bsm.settleCall(sid, callId, abi.encode("sb-again", "{}"));
    }

    function test_deleteResult_fromCoOperator_changesNothing_thenRoutedSettles() public {
        address op = createSandbox(USER, "sb");
        vm.prank(USER);
        uint64 callId = tangle.submitJob(sid, 1, abi.encode("sb"));
        vm.prank(_other(op));
        tangle.submitResult(sid, callId, abi.encode("{}"));
        vm.assertTrue(bsm.isSandboxActive("sb"), "still held");
        (uint32 active,,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 1, "slot still counted");
        vm.prank(op);
        bsm.settleCall(sid, callId, abi.encode("{}"));
        vm.assertFalse(bsm.isSandboxActive("sb"), "deleted by its operator's settlement");
        (active,,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "freed once");
    }

    // ── 3. capacity that comes back ─────────────────────────────────────────────────────────

    function test_reservation_expires_thenAnyoneReleases() public {
        vm.warp(10_000);
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("lost")));
        uint64 expiresAt = 10_000 + bsm.reservationTimeout();
        vm.assertEq(bsm.reservationTimeout(), 3600, "one hour by default");
        vm.expectRevert(
            abi.encodeWithSelector(AgentSandboxBlueprint.ReservationNotExpired.selector, sid, callId, expiresAt)
        );
        vm.prank(STRANGER);
        bsm.releaseReservation(sid, callId);
        vm.warp(expiresAt);
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.ReservationReleased(sid, callId, op);
        vm.prank(STRANGER);
        bsm.releaseReservation(sid, callId);
        (, uint32 reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(reserved, 0, "released");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NoReservation.selector, sid, callId));
        bsm.releaseReservation(sid, callId);
        // A late result of the released call records nothing and frees nothing twice.
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("late", "{}"));
        vm.assertFalse(bsm.isSandboxActive("late"), "late result ignored");
        (, reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(reserved, 0, "not freed twice");
    }

    /// Issue 29: a slow but legitimate create whose reservation a stranger released after the
    /// timeout. Tangle still completes the call with the assigned operator's late result, so the
    /// blueprint must say in that result's transaction that it recorded nothing (ResultIgnored):
    /// the operator reads it there and deletes the sandbox it built. Before, the drop was silent.
    function test_lateResult_afterExpiredRelease_isDroppedVisibly() public {
        vm.warp(20_000);
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("slow")));
        vm.warp(20_000 + bsm.reservationTimeout());
        vm.prank(STRANGER);
        bsm.releaseReservation(sid, callId);
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.ResultIgnored(sid, callId, op);
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("slow-sb", "{}"));
        vm.assertTrue(tangle.getJobCall(sid, callId).completed, "tangle took the result");
        vm.assertEq(bsm.getSandboxOperator("slow-sb"), address(0), "nothing recorded");
        (uint32 active, uint32 reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "no slot taken");
        vm.assertEq(reserved, 0, "not freed twice");
        // Nor can the operator record it afterwards, and the owner's delete finds nothing.
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NotChosenOperator.selector, sid, callId, op));
        vm.prank(op);
        bsm.settleCall(sid, callId, abi.encode("slow-sb", "{}"));
        vm.prank(USER);
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "slow-sb"));
        tangle.submitJob(sid, 1, abi.encode("slow-sb"));
    }

    /// A result for a call the blueprint still holds is never reported dropped.
    function test_resultOfAnOpenCall_isNotDropped() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("kept")));
        vm.recordLogs();
        vm.prank(op);
        tangle.submitResult(sid, callId, abi.encode("kept-sb", "{}"));
        vm.assertEq(countLogs(vm.getRecordedLogs(), address(bsm), AgentSandboxBlueprint.ResultIgnored.selector), 0, "not dropped");
        vm.assertEq(bsm.getSandboxOperator("kept-sb"), op, "recorded");
    }

    function test_reservation_assignedOperatorReleasesItsOwn_atOnce() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("given-up")));
        vm.prank(op);
        bsm.releaseReservation(sid, callId);
        (, uint32 reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(reserved, 0, "released by its operator");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NoReservation.selector, sid, 99));
        bsm.releaseReservation(sid, 99);
    }

    function test_reservationTimeout_ownerSetter() public {
        vm.expectRevert();
        vm.prank(STRANGER);
        bsm.setReservationTimeout(60);
        vm.prank(DEVELOPER);
        bsm.setReservationTimeout(60);
        vm.assertEq(bsm.reservationTimeout(), 60, "set");
    }

    function test_reportSandboxGone_freesSlot_thenOwnersDeleteIsANoOp() public {
        address op = createSandbox(USER, "expired");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.NotSandboxOwner.selector, STRANGER, op));
        vm.prank(STRANGER);
        bsm.reportSandboxGone("expired");
        vm.expectEmit(true, true, false, true, address(bsm));
        emit AgentSandboxBlueprint.SandboxGone(keccak256("expired"), op);
        vm.prank(op);
        bsm.reportSandboxGone("expired");
        (uint32 active,,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "slot freed");
        vm.assertFalse(bsm.isSandboxActive("expired"), "not active");
        vm.assertTrue(bsm.canLeave(sid, op), "nothing held");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "expired"));
        vm.prank(op);
        bsm.reportSandboxGone("expired");
        // The owner's delete is still accepted, routed to the operator, and frees nothing twice.
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NotSandboxOwner.selector, STRANGER, USER));
        vm.prank(STRANGER);
        tangle.submitJob(sid, 1, abi.encode("expired"));
        vm.expectEmit(true, true, true, true, address(bsm));
        emit AgentSandboxBlueprint.OperatorRouted(sid, 1, op);
        vm.prank(USER);
        uint64 del = tangle.submitJob(sid, 1, abi.encode("expired"));
        vm.prank(op);
        tangle.submitResult(sid, del, abi.encode("{}"));
        vm.assertEq(bsm.totalActiveSandboxes(), 0, "total");
        (active,,) = bsm.getOperatorLoad(op);
        vm.assertEq(active, 0, "not freed twice");
        expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "expired"));
        vm.prank(USER);
        tangle.submitJob(sid, 1, abi.encode("expired"));
    }

    function test_termination_freesEverySandboxSlot_andPendingReservationsCanGo() public {
        address a = createSandbox(USER, "one");
        createSandbox(USER, "two");
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("pending")));
        vm.assertFalse(bsm.canLeave(sid, a), "held");
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.assertTrue(bsm.serviceEnded(sid), "ended");
        vm.assertEq(bsm.totalActiveSandboxes(), 0, "all freed");
        vm.assertFalse(bsm.isSandboxActive("one"), "no longer active");
        (uint32 active, uint32 reserved,) = bsm.getOperatorLoad(op);
        vm.assertEq(reserved, 1, "pending create still reserved");
        vm.prank(STRANGER);
        bsm.releaseReservation(sid, callId); // the service is no longer active: anyone may
        for (uint256 i = 0; i < 3; i++) {
            (active, reserved,) = bsm.getOperatorLoad(operatorAt(i));
            vm.assertEq(active + reserved, 0, "every slot back");
            vm.assertTrue(bsm.canLeave(sid, operatorAt(i)), "may leave");
        }
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.UnknownSandbox.selector, "one"));
        vm.prank(a);
        bsm.reportSandboxGone("one");
    }

    function test_leave_refusedWithReservation_allowedWhenIdle() public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("r")));
        vm.assertFalse(bsm.canLeave(sid, op), "a reservation blocks leaving");
        vm.expectRevert(abi.encodeWithSelector(AgentSandboxBlueprint.OperatorHasActiveSandboxes.selector, op, 1, 0));
        vm.prank(address(tangle));
        bsm.onUnregister(op);
        vm.prank(op);
        bsm.releaseReservation(sid, callId);
        vm.assertTrue(bsm.canLeave(sid, op), "idle");
        vm.prank(address(tangle));
        bsm.onUnregister(op);
    }
}

/// 4. Gas that does not depend on the random pick. Each test runs as one transaction, so the
/// state it starts from (one operator already holding a reservation, the others none) is made in
/// setUp, as earlier transactions would on a chain.
contract AgentSandboxBlueprintGasTest is BlueprintFixture {
    function setUp() public {
        deployWorld(false, false, 3, 4, "");
        submitCreate(USER, abi.encode(createReq("held")));
    }

    /// From one state (one operator already holding a reservation, the others none), the same
    /// create under many prevrandao values lands on different operators and costs the same gas.
    function test_createGas_independentOfTheAssignment() public {
        bytes memory data = abi.encodeCall(tangle.submitJob, (sid, 0, abi.encode(createReq("next"))));
        address target = address(tangle);
        uint256 snap = vm.snapshotState();
        uint256 firstGas;
        address firstOp;
        bool picksDiffer;
        for (uint256 s = 1; s <= 24; s++) {
            vm.revertToState(snap);
            vm.prevrandao(keccak256(abi.encode(s)));
            vm.recordLogs();
            vm.prank(USER);
            // A bare call on prepared calldata: the test's own memory growth costs nothing here.
            uint256 used;
            bool ok;
            assembly {
                let before := gas()
                ok := call(gas(), target, 0, add(data, 0x20), mload(data), 0, 0)
                used := sub(before, gas())
            }
            vm.assertTrue(ok, "create accepted");
            Vm.Log[] memory logs = vm.getRecordedLogs();
            address op;
            for (uint256 i = 0; i < logs.length; i++) {
                if (logs[i].emitter == address(bsm) && logs[i].topics[0] == AgentSandboxBlueprint.OperatorAssigned.selector) {
                    op = address(uint160(uint256(logs[i].topics[3])));
                }
            }
            if (s == 1) {
                firstGas = used;
                firstOp = op;
            } else {
                vm.assertEq(used, firstGas, "create gas depends on the pick");
                if (op != firstOp) picksDiffer = true;
            }
        }
        vm.assertTrue(picksDiffer, "the picks really differed");
    }
}
