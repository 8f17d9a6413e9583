// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vm} from "./TestBase.sol";
import {TangleFixture} from "./TangleFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {BlueprintServiceManagerBase} from "../src/tangle/BlueprintServiceManagerBase.sol";

/// A manager whose answers the tests choose, to drive LocalTangle's failure paths.
contract KnobManager is BlueprintServiceManagerBase {
    uint32 public required = 1;
    bool public aggregationReverts;
    bool public resultReverts;
    bool public resultBurnsGas;
    uint256 public results;

    function set(uint32 r, bool aggRev, bool resRev, bool burn) external {
        required = r;
        aggregationReverts = aggRev;
        resultReverts = resRev;
        resultBurnsGas = burn;
    }

    function getRequiredResultCount(uint64, uint8) external view override returns (uint32) {
        return required;
    }

    function requiresAggregation(uint64, uint8) external view override returns (bool) {
        require(!aggregationReverts, "no answer");
        return false;
    }

    function onJobResult(uint64, uint8, uint64, address, bytes32, bytes calldata)
        external
        payable
        override
        onlyFromTangle
    {
        if (resultReverts) revert("refused");
        if (resultBurnsGas) {
            while (true) {}
        }
        results++;
    }
}

contract LocalTangleTest is TangleFixture {
    BlueprintServiceManagerBase internal toy;
    uint64 internal bp;

    function setUp() public {
        tangle = new LocalTangle();
        toy = new BlueprintServiceManagerBase();
        bp = newBlueprint(address(toy));
        register(bp, operatorAt(0), "");
        register(bp, operatorAt(1), "");
    }

    // ── blueprints ──────────────────────────────────────────────────────────────────────────

    function test_createBlueprint_countsFromZeroAndInformsManager() public {
        vm.assertEq(bp, 0, "first id");
        vm.assertEq(toy.tangleCore(), address(tangle), "tangleCore");
        vm.assertEq(toy.blueprintOwner(), DEVELOPER, "owner");
        vm.assertEq(toy.blueprintId(), 0, "id");
        BlueprintServiceManagerBase other = new BlueprintServiceManagerBase();
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.BlueprintCreated(1, DEVELOPER, address(other), "ipfs://blueprint", keccak256("ipfs://blueprint"));
        vm.assertEq(newBlueprint(address(other)), 1, "second id");
    }

    function test_createBlueprint_managerFirstCallerWins() public {
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.BlueprintAlreadyCreated.selector, 0, address(tangle))
        );
        newBlueprint(address(toy));
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.BlueprintAlreadyCreated.selector, 0, address(tangle))
        );
        toy.onBlueprintCreated(9, STRANGER, STRANGER);
    }

    // ── operators ───────────────────────────────────────────────────────────────────────────

    function test_registerOperator_bothOverloads() public {
        address op = operatorAt(7);
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.OperatorRegistered(bp, op, fakeKey(7), "http://op7");
        vm.prank(op);
        tangle.registerOperator(bp, fakeKey(7), "http://op7");
        vm.assertTrue(tangle.isOperatorRegistered(bp, op), "registered (3-arg)");
        (bytes memory key, string memory rpc) = tangle.getOperatorPreferences(bp, op);
        vm.assertEq(key, fakeKey(7), "key");
        vm.assertEq(rpc, "http://op7", "rpc");
        register(bp, operatorAt(8), abi.encode(uint32(5)));
        vm.assertTrue(tangle.isOperatorRegistered(bp, operatorAt(8)), "registered (4-arg)");
    }

    function test_registerOperator_refusals() public {
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorAlreadyRegistered.selector, bp, operatorAt(0)));
        register(bp, operatorAt(0), "");
        vm.expectRevert(ITangle.InvalidOperatorKey.selector);
        vm.prank(operatorAt(9));
        tangle.registerOperator(bp, hex"0102", "x");
        vm.expectRevert(abi.encodeWithSelector(ITangle.BlueprintNotFound.selector, 42));
        vm.prank(operatorAt(9));
        tangle.registerOperator(42, fakeKey(9), "x");
    }

    function test_unregister_refusedWhileServingThenAllowed() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorHasActiveServices.selector, bp, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.unregisterOperator(bp);
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.prank(operatorAt(0));
        tangle.unregisterOperator(bp);
        vm.assertFalse(tangle.isOperatorRegistered(bp, operatorAt(0)), "unregistered");
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.unregisterOperator(bp);
    }

    // ── services ────────────────────────────────────────────────────────────────────────────

    function test_requestAndApprove_activatesWhenAllApproved() public {
        address[] memory two = ops(2);
        vm.expectEmit(true, true, true, true, address(tangle));
        emit ITangle.ServiceRequested(0, bp, USER, 0);
        vm.prank(USER);
        uint64 rid = tangle.requestService(bp, two, hex"beef", new address[](0), 0, address(0), 0, 0);
        vm.assertEq(rid, 0, "request id");
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertFalse(tangle.isServiceActive(0), "not active after one of two");
        vm.expectRevert(abi.encodeWithSelector(ITangle.AlreadyApproved.selector, rid, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));

        vm.expectEmit(true, true, true, true, address(tangle));
        emit ITangle.ServiceActivated(0, rid, bp, 0);
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
        vm.assertTrue(tangle.isServiceActive(0), "active");
        vm.assertTrue(tangle.isServiceOperator(0, operatorAt(1)), "operator");
        vm.assertFalse(tangle.isServiceOperator(0, STRANGER), "stranger");
        vm.assertEq(tangle.getServiceOperators(0).length, 2, "operators");
        vm.assertTrue(tangle.isPermittedCaller(0, USER), "requester permitted");
        ITangle.Service memory s = tangle.getService(0);
        vm.assertEq(s.owner, USER, "owner");
        vm.assertEq(s.status, 1, "status");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestAlreadyProcessed.selector, rid));
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
    }

    function test_requestService_refusals() public {
        vm.startPrank(USER);
        vm.expectRevert(ITangle.NoOperators.selector);
        tangle.requestService(bp, new address[](0), "", new address[](0), 0, address(0), 0, 0);
        address[] memory bad = new address[](1);
        bad[0] = STRANGER;
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, STRANGER));
        tangle.requestService(bp, bad, "", new address[](0), 0, address(0), 0, 0);
        address[] memory dup = new address[](2);
        dup[0] = operatorAt(0);
        dup[1] = operatorAt(0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.DuplicateOperator.selector, operatorAt(0)));
        tangle.requestService(bp, dup, "", new address[](0), 0, address(0), 0, 0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.InvalidMsgValue.selector, 5, 0));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 5, 0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.TokenNotAllowed.selector, address(1)));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(1), 0, 0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.InvalidConfidentiality.selector, 4));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 0, 4);
        vm.stopPrank();
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestNotFound.selector, 9));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(9));
    }

    function test_approve_byNonListedOperatorRefused_andReject() public {
        vm.prank(USER);
        uint64 rid = tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 0, 0);
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, operatorAt(1)));
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
        vm.prank(operatorAt(0));
        tangle.rejectService(rid);
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestAlreadyProcessed.selector, rid));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
    }

    function test_ttl_expiresService() public {
        vm.prank(USER);
        uint64 rid = tangle.requestService(bp, ops(1), "", new address[](0), 100, address(0), 0, 0);
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertTrue(tangle.isServiceActive(0), "active");
        vm.warp(block.timestamp + 100);
        vm.assertFalse(tangle.isServiceActive(0), "expired");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotActive.selector, 0));
        vm.prank(USER);
        tangle.submitJob(0, 0, "");
    }

    function test_terminate_ownerOnlyThenInactive() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.NotServiceOwner.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.terminateService(sid);
        vm.expectEmit(true, false, false, true, address(tangle));
        emit ITangle.ServiceTerminated(sid);
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.assertFalse(tangle.isServiceActive(sid), "inactive");
        vm.assertEq(tangle.getService(sid).status, 2, "terminated");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotActive.selector, sid));
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotActive.selector, sid));
        vm.prank(USER);
        tangle.submitJob(sid, 0, "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotFound.selector, 77));
        tangle.getService(77);
    }

    // ── jobs ────────────────────────────────────────────────────────────────────────────────

    function test_submitJob_recordsAndEmits_callIdsPerService() public {
        uint64 a = newService(bp, USER, ops(1), "");
        uint64 b = newService(bp, USER, ops(1), "");
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.JobSubmitted(a, 0, 7, USER, hex"c0ffee");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(a, 7, hex"c0ffee"), 0, "a/0");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(a, 7, hex"c0ffee"), 1, "a/1");
        vm.prank(USER);
        vm.assertEq(tangle.submitJob(b, 3, ""), 0, "b/0: call ids count per service");
        ITangle.JobCall memory c = tangle.getJobCall(a, 1);
        vm.assertEq(c.jobIndex, 7, "jobIndex");
        vm.assertEq(c.caller, USER, "caller");
        vm.assertEq(c.createdAt, block.timestamp, "createdAt");
        vm.assertEq(c.resultCount, 0, "resultCount");
        vm.assertFalse(c.completed, "completed");
        vm.assertEq(tangle.getJobInputsHash(a, 1), keccak256(hex"c0ffee"), "inputs hash");
        vm.assertEq(tangle.jobCallCount(a), 2, "count");
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
        tangle.setPermittedCaller(sid, STRANGER, true);
        vm.prank(STRANGER);
        tangle.submitJob(sid, 0, "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotFound.selector, 99));
        tangle.submitJob(99, 0, "");
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
        ITangle.JobCall memory c = tangle.getJobCall(sid, cid);
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
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        register(b2, operatorAt(1), "");
        m.set(2, false, false, false);
        uint64 sid = newService(b2, USER, ops(2), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "1");
        vm.assertFalse(tangle.getJobCall(sid, cid).completed, "needs two");
        vm.assertTrue(tangle.hasSubmittedResult(sid, cid, operatorAt(0)), "submitted");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ResultAlreadySubmitted.selector, sid, cid, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "again");
        vm.prank(operatorAt(1));
        tangle.submitResult(sid, cid, "2");
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "two of two");
        vm.assertEq(m.results(), 2, "hook ran twice");
    }

    function test_requiredCountZeroMeansAllOperators() public {
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        register(b2, operatorAt(1), "");
        m.set(0, false, false, false);
        uint64 sid = newService(b2, USER, ops(2), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "1");
        vm.assertFalse(tangle.getJobCall(sid, cid).completed, "one of two");
    }

    function test_aggregationQueryFailure_refusesResult() public {
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        uint64 sid = newService(b2, USER, ops(1), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 3, "");
        m.set(1, true, false, false);
        vm.expectRevert(abi.encodeWithSelector(ITangle.AggregationRequired.selector, sid, 3));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "");
    }

    function test_failingResultHook_isReportedAndIgnored() public {
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        uint64 sid = newService(b2, USER, ops(1), "");
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
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        uint64 sid = newService(b2, USER, ops(1), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        m.set(1, false, false, true);
        vm.recordLogs();
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "");
        vm.assertEq(
            countLogs(vm.getRecordedLogs(), address(tangle), ITangle.ManagerHookFailed.selector), 1, "hook failed once"
        );
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "completed anyway");
    }

    function test_tooLittleGasForHook_reverts() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "");
        vm.prank(operatorAt(0));
        (bool ok,) = address(tangle).call{gas: 200_000}(abi.encodeCall(tangle.submitResult, (sid, cid, "")));
        vm.assertFalse(ok, "refused with too little gas");
        vm.assertFalse(tangle.getJobCall(sid, cid).completed, "nothing recorded");
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
    }

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
    }

    /// The toy manager accepts any job index and any inputs, end to end.
    function test_toyManager_anyJobRoundTrip() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        for (uint8 j = 0; j < 3; j++) {
            vm.prank(USER);
            uint64 cid = tangle.submitJob(sid, j * 100, abi.encode(j));
            vm.prank(operatorAt(0));
            tangle.submitResult(sid, cid, abi.encode("ok"));
            vm.assertTrue(tangle.getJobCall(sid, cid).completed, "completed");
        }
    }
}
