// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vm} from "./TestBase.sol";
import {TangleFixture} from "./TangleFixture.sol";
import {KnobManager} from "./LocalTangle.t.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {BlueprintServiceManagerBase} from "../src/tangle/BlueprintServiceManagerBase.sol";

/// LocalTangle's jobs and manager hooks, against the real core's behaviour.
contract LocalTangleJobsTest is TangleFixture {
    BlueprintServiceManagerBase internal toy;
    uint64 internal bp;

    function setUp() public {
        tangle = newTangle();
        toy = new BlueprintServiceManagerBase();
        bp = newBlueprint(address(toy));
        register(bp, operatorAt(0), "");
        register(bp, operatorAt(1), "");
    }

    function knobService(uint256 n) internal returns (KnobManager m, uint64 sid) {
        m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        for (uint256 i = 0; i < n; i++) {
            register(b2, operatorAt(i), "");
        }
        sid = newService(b2, USER, ops(n), "");
    }

    function test_managerHookGasLimit_isTheProtocolDefault() public view {
        vm.assertEq(tangle.managerHookGasLimit(), 500_000, "500k");
    }

    function test_submitJob_recordsAndEmits_callIdsPerService() public {
        uint64 a = newService(bp, USER, ops(1), "");
        uint64 b = newService(bp, USER, ops(1), "");
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.JobSubmitted(a, 0, 4, USER, hex"c0ffee");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(a, 4, hex"c0ffee"), 0, "a/0");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(a, 4, hex"c0ffee"), 1, "a/1");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(b, 3, ""), 0, "b/0: call ids count per service");
        ITangleTypes.JobCall memory c = tangle.getJobCall(a, 1);
        vm.assertEq(c.jobIndex, 4, "jobIndex");
        vm.assertEq(c.caller, USER, "caller");
        vm.assertEq(c.createdAt, block.timestamp, "createdAt");
        vm.assertEq(c.resultCount, 0, "resultCount");
        vm.assertFalse(c.completed, "completed");
        vm.assertEq(tangle.getJobCall(a, 2).createdAt, 0, "an unknown call answers zeros");
    }

    /// Jobs beyond the definition's list are refused by Tangle before any hook runs.
    function test_submitJob_jobIndexBeyondTheDefinitionRefused() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.InvalidJobIndex.selector, 5));
        vm.prank(USER);
        tangle.submitJob(sid, 5, "");
    }

    function test_submitJob_jobIndexNotIndexed() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.recordLogs();
        vm.prank(USER);
        tangle.submitJob(sid, 4, hex"01");
        Vm.Log[] memory logs = vm.getRecordedLogs();
        vm.assertEq(logs.length, 1, "one log");
        vm.assertEq(logs[0].topics.length, 3, "3 topics: jobIndex is data");
        (uint8 job, address caller, bytes memory inputs) = abi.decode(logs[0].data, (uint8, address, bytes));
        vm.assertEq(job, 4, "job");
        vm.assertEq(caller, USER, "caller");
        vm.assertEq(inputs, hex"01", "inputs");
    }

    function test_submitJob_permittedCallersOnly() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.NotPermittedCaller.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.submitJob(sid, 0, "");
        vm.prank(USER);
        tangle.addPermittedCaller(sid, STRANGER);
        vm.prank(STRANGER);
        tangle.submitJob(sid, 0, "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotFound.selector, 99));
        tangle.submitJob(99, 0, "");
    }

    /// onJobCall is a reverting hook: the manager's own error arrives wrapped in ManagerReverted
    /// (the stand-in used to bubble it unwrapped, which no real Tangle does).
    function test_onJobCall_refusalIsWrappedInManagerReverted() public {
        (KnobManager m, uint64 sid) = knobService(1);
        m.setCall(true, false);
        expectManagerRevert(address(m), abi.encodeWithSelector(KnobManager.NotToday.selector, sid));
        vm.prank(USER);
        tangle.submitJob(sid, 0, "");
    }

    /// A reverting hook that needs more than the cap fails with no data: ManagerRejected, even
    /// when the transaction has gas to spare.
    function test_onJobCall_aboveTheGasCap_isRejected() public {
        (KnobManager m, uint64 sid) = knobService(1);
        m.setCall(false, true);
        vm.expectRevert(abi.encodeWithSelector(ITangle.ManagerRejected.selector, address(m)));
        vm.prank(USER);
        tangle.submitJob{gas: 5_000_000}(sid, 0, "");
    }

    function test_submitResult_completesAndRefusesBadInput() public {
        uint64 sid = newService(bp, USER, ops(2), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "in");

        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotInService.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.submitResult(sid, cid, "out");

        vm.expectRevert(abi.encodeWithSelector(ITangle.JobCallNotFound.selector, sid, 5));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, 5, "out");

        vm.expectEmit(true, true, true, true, address(tangle));
        emit ITangle.JobResultSubmitted(sid, cid, operatorAt(0), "out");
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.JobCompleted(sid, cid);
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "out");
        ITangleTypes.JobCall memory c = tangle.getJobCall(sid, cid);
        vm.assertTrue(c.completed, "completed");
        vm.assertEq(c.resultCount, 1, "count");

        vm.expectRevert(abi.encodeWithSelector(ITangle.JobAlreadyCompleted.selector, sid, cid));
        vm.prank(operatorAt(1));
        tangle.submitResult(sid, cid, "late");
    }

    function test_submitResults_batchAndLengthMismatch() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.startPrank(USER);
        tangle.submitJob(sid, 0, "a");
        tangle.submitJob(sid, 1, "b");
        vm.stopPrank();
        uint64[] memory ids = new uint64[](2);
        ids[1] = 1;
        bytes[] memory outs = new bytes[](2);
        vm.prank(operatorAt(0));
        tangle.submitResults(sid, ids, outs);
        vm.assertTrue(tangle.getJobCall(sid, 0).completed && tangle.getJobCall(sid, 1).completed, "both done");
        vm.expectRevert(ITangle.LengthMismatch.selector);
        vm.prank(operatorAt(0));
        tangle.submitResults(sid, ids, new bytes[](1));
    }

    function test_secondResultFromSameOperatorRefused() public {
        (KnobManager m, uint64 sid) = knobService(2);
        m.set(2, false, false, false);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "1");
        vm.assertFalse(tangle.getJobCall(sid, cid).completed, "needs two");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ResultAlreadySubmitted.selector, sid, cid, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "again");
        vm.prank(operatorAt(1));
        tangle.submitResult(sid, cid, "2");
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "two of two");
        vm.assertEq(m.results(), 2, "hook ran twice");
    }

    /// The real core compares resultCount with the answer as is: 0 completes on the first result.
    function test_requiredCountZero_completesOnTheFirstResult() public {
        (KnobManager m, uint64 sid) = knobService(2);
        m.set(0, false, false, false);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "1");
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "one result completes it");
    }

    function test_aggregationQueryFailure_refusesResult() public {
        (KnobManager m, uint64 sid) = knobService(1);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 3, "");
        m.set(1, true, false, false);
        vm.expectRevert(abi.encodeWithSelector(ITangle.AggregationRequired.selector, sid, 3));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "");
    }

    function test_failingResultHook_isReportedAndIgnored() public {
        (KnobManager m, uint64 sid) = knobService(1);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        m.set(1, false, true, false);
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.ManagerHookFailed(
            address(m), KnobManager.onJobResult.selector, abi.encodeWithSignature("Error(string)", "refused")
        );
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "");
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "completed anyway");
    }

    function test_gasBurningHook_isCappedAndIgnored() public {
        (KnobManager m, uint64 sid) = knobService(1);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        m.set(1, false, false, true);
        vm.recordLogs();
        vm.prank(operatorAt(0));
        tangle.submitResult{gas: 5_000_000}(sid, cid, "");
        vm.assertEq(
            countLogs(vm.getRecordedLogs(), address(tangle), ITangle.ManagerHookFailed.selector), 1, "hook failed once"
        );
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "completed anyway");
    }

    /// As on the real router there is no up-front gas check: a best-effort hook gets
    /// min(cap, 63/64 of the gas left). A result sent with less gas than its hook needs fails
    /// as a whole (the 1/64 kept back cannot finish the call), so nothing is recorded and a gas
    /// estimate always lands where the hook ran.
    function test_tooLittleGasForHook_failsTheTransaction() public {
        (KnobManager m, uint64 sid) = knobService(1);
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        m.setResultSlots(10); // ~220k gas: within the cap, beyond what 200k leaves it
        vm.prank(operatorAt(0));
        (bool ok,) = address(tangle).call{gas: 200_000}(abi.encodeCall(tangle.submitResult, (sid, cid, "")));
        vm.assertFalse(ok, "refused");
        vm.assertFalse(tangle.getJobCall(sid, cid).completed, "nothing recorded");
        vm.prank(operatorAt(0));
        tangle.submitResult{gas: 1_000_000}(sid, cid, "");
        vm.assertEq(m.results(), 1, "with enough gas the hook runs");
    }

    function test_baseHooks_onlyFromTangle() public {
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyTangleAllowed.selector, STRANGER, address(tangle))
        );
        vm.prank(STRANGER);
        toy.onJobCall(0, 0, 0, "");
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyTangleAllowed.selector, STRANGER, address(tangle))
        );
        vm.prank(STRANGER);
        toy.onJobResult(0, 0, 0, STRANGER, bytes32(0), "");
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.OnlyTangleAllowed.selector, STRANGER, address(tangle))
        );
        vm.prank(STRANGER);
        toy.onOperatorBinaryAcked(0, 1, STRANGER);
    }

    /// tnt-core 0.19's BlueprintServiceManagerBase defaults, including the hooks 0.19 added.
    function test_baseDefaults() public view {
        vm.assertFalse(toy.requiresAggregation(0, 0), "no aggregation");
        vm.assertEq(toy.getRequiredResultCount(0, 0), 1, "one result");
        vm.assertTrue(toy.canJoin(0, STRANGER), "canJoin");
        vm.assertTrue(toy.canLeave(0, STRANGER), "canLeave");
        (bool useDefault, uint256 minStake) = toy.getMinOperatorStake();
        vm.assertTrue(useDefault, "default stake");
        vm.assertEq(minStake, 0, "min stake");
        vm.assertEq(toy.querySlashingOrigin(0), address(toy), "slashing origin");
        vm.assertEq(toy.queryDisputeOrigin(0), address(toy), "dispute origin");
        vm.assertEq(toy.queryDeveloperPaymentAddress(0), DEVELOPER, "developer");
        vm.assertTrue(toy.queryIsPaymentAssetAllowed(0, address(0)), "native allowed");
        (bool graceDefault, uint64 grace) = toy.getNonPaymentTerminationPolicy(0);
        vm.assertTrue(graceDefault, "default grace");
        vm.assertEq(grace, 0, "grace");
        vm.assertFalse(toy.forceRemoveAllowsBelowMin(0), "keeps the minimum");
        vm.assertEq(toy.computeBillAdjustmentBps(0, 0, 1), 10_000, "bills in full");
    }

    /// The toy manager accepts any job of the definition and any inputs, end to end.
    function test_toyManager_anyJobRoundTrip() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        for (uint8 j = 0; j < 5; j++) {
            vm.prank(USER);
            uint64 cid = tangle.submitJob(sid, j, abi.encode(j));
            vm.prank(operatorAt(0));
            tangle.submitResult(sid, cid, abi.encode("ok"));
            vm.assertTrue(tangle.getJobCall(sid, cid).completed, "completed");
        }
    }
}
