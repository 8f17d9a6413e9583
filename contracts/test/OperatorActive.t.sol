// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TangleFixture} from "./TangleFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {IMultiAssetDelegation} from "../src/tangle/IMultiAssetDelegation.sol";
import {LocalBondToken} from "../src/tangle/LocalBondToken.sol";
import {LocalStaking} from "../src/tangle/LocalStaking.sol";
import {BlueprintServiceManagerBase} from "../src/tangle/BlueprintServiceManagerBase.sol";

/// The core's operator-active checks after registration (tnt-core 8a2b24c): requestService
/// (ServicesRequests._validateRequestOperators: registered, then isOperatorActive), approveService
/// and rejectService (ServicesApprovals: isOperatorActive before the operator list) and submitResult
/// (JobsSubmission._validateResultSubmissionState: in the service, then isOperatorActive). An
/// operator stops being active by startLeaving (OperatorManager._startLeaving: refused while it
/// serves an active service) or by a slash below the minimum (not in the stand-in: mocked here).
contract OperatorActiveTest is TangleFixture {
    uint64 internal bp;

    function setUp() public {
        tangle = newTangle();
        bp = newBlueprint(address(new BlueprintServiceManagerBase()));
        register(bp, operatorAt(0), "");
        register(bp, operatorAt(1), "");
    }

    function request(address[] memory list) internal returns (uint64 rid) {
        vm.prank(USER);
        rid = tangle.requestService(bp, list, "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
    }

    function leave(address op) internal {
        vm.prank(op);
        staking.startLeaving();
    }

    function test_startLeaving_refusedWhileServing_thenInactive() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.assertEq(tangle.getOperatorTotalActiveServices(operatorAt(0)), 1, "one active service");
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorHasActiveServices.selector, operatorAt(0)));
        leave(operatorAt(0));
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.assertEq(tangle.getOperatorTotalActiveServices(operatorAt(0)), 0, "none left");
        leave(operatorAt(0));
        vm.assertFalse(staking.isOperatorActive(operatorAt(0)), "leaving: not active");
        vm.assertTrue(staking.isOperator(operatorAt(0)), "still an operator");
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorNotActive.selector, operatorAt(0)));
        leave(operatorAt(0));
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorNotActive.selector, operatorAt(0)));
        vm.deal(operatorAt(0), 1 ether);
        vm.prank(operatorAt(0));
        staking.increaseStake{value: 1 ether}();
    }

    function test_requestService_fromAnInactiveOperator_refused() public {
        leave(operatorAt(1));
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, operatorAt(1)));
        request(ops(2));
        // Registered comes first: a stranger is OperatorNotRegistered, active or not.
        address[] memory s = new address[](1);
        s[0] = STRANGER;
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, STRANGER));
        request(s);
    }

    function test_approveAndReject_byAnInactiveOperator_refused() public {
        uint64 rid = request(ops(2));
        leave(operatorAt(1)); // a pending request is not an active service
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, operatorAt(1)));
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, operatorAt(1)));
        vm.prank(operatorAt(1));
        tangle.rejectService(rid);
        // Active is checked before the operator list: a non-operator is OperatorNotActive too.
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, STRANGER));
        vm.prank(STRANGER);
        tangle.approveService(minimalApproval(rid));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertEq(tangle.serviceCount(), 0, "never activated");
    }

    function test_submitResult_fromAnInactiveOperator_refused() public {
        uint64 sid = newService(bp, USER, ops(2), "");
        vm.prank(USER);
        uint64 cid = tangle.submitJob(sid, 0, "in");
        // Slashed below the minimum (the real way there; the stand-in has no slashing).
        vm.mockCall(
            address(staking), abi.encodeCall(IMultiAssetDelegation.isOperatorActive, (operatorAt(0))), abi.encode(false)
        );
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.submitResult(sid, cid, "out");
        // Not in the service comes first.
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotInService.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.submitResult(sid, cid, "out");
        vm.prank(operatorAt(1));
        tangle.submitResult(sid, cid, "out");
        vm.assertTrue(tangle.getJobCall(sid, cid).completed, "the active operator's result counts");
    }
}

/// LocalStaking with an ERC20 bond, as the real LocalTestnet bonds in TNT (OperatorManager
/// _registerOperatorWithAsset / _increaseStakeWithAsset, SafeERC20, OpenZeppelin 5's errors).
contract BondStakingTest is TangleFixture {
    LocalBondToken internal tnt;
    address internal constant OP = address(0x0B0);

    function setUp() public {
        tnt = new LocalBondToken();
        staking = new LocalStaking(MIN_STAKE, address(tnt));
        tnt.mint(OP, 10 ether);
    }

    function test_nativeIsRefused_theBondTokenOnly() public {
        vm.assertEq(staking.operatorBondToken(), address(tnt), "bond token");
        vm.deal(OP, 1 ether);
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorBondTokenOnly.selector, address(tnt)));
        vm.prank(OP);
        staking.registerOperator{value: 1 ether}();
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorBondTokenOnly.selector, address(tnt)));
        vm.prank(OP);
        staking.registerOperatorWithAsset(address(0xE20), 1 ether);
    }

    function test_registerWithTheBond_movesTheTokens() public {
        vm.expectRevert(
            abi.encodeWithSelector(IMultiAssetDelegation.ERC20InsufficientAllowance.selector, address(staking), 0, 1 ether)
        );
        vm.prank(OP);
        staking.registerOperatorWithAsset(address(tnt), 1 ether);
        vm.prank(OP);
        tnt.approve(address(staking), 100 ether);
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.InsufficientStake.selector, MIN_STAKE, 0.5 ether));
        vm.prank(OP);
        staking.registerOperatorWithAsset(address(tnt), 0.5 ether);
        vm.expectRevert(
            abi.encodeWithSelector(IMultiAssetDelegation.ERC20InsufficientBalance.selector, OP, 10 ether, 20 ether)
        );
        vm.prank(OP);
        staking.registerOperatorWithAsset(address(tnt), 20 ether);

        vm.prank(OP);
        staking.registerOperatorWithAsset(address(tnt), 2 ether);
        vm.assertTrue(staking.isOperatorActive(OP), "active");
        vm.assertEq(staking.getOperatorStake(OP), 2 ether, "stake");
        vm.assertEq(tnt.balanceOf(address(staking)), 2 ether, "held by staking");
        vm.assertEq(tnt.balanceOf(OP), 8 ether, "left");
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorAlreadyRegistered.selector, OP));
        vm.prank(OP);
        staking.registerOperatorWithAsset(address(tnt), 2 ether);

        vm.expectRevert(IMultiAssetDelegation.ZeroAmount.selector);
        vm.prank(OP);
        staking.increaseStakeWithAsset(address(tnt), 0);
        vm.prank(OP);
        staking.increaseStakeWithAsset(address(tnt), 3 ether);
        vm.assertEq(staking.getOperatorSelfStake(OP), 5 ether, "increased");
        vm.deal(OP, 1 ether);
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorBondTokenOnly.selector, address(tnt)));
        vm.prank(OP);
        staking.increaseStake{value: 1 ether}();
    }

    function test_nativeStaking_refusesAnAsset() public {
        LocalStaking native = new LocalStaking(MIN_STAKE, address(0));
        vm.expectRevert(abi.encodeWithSelector(IMultiAssetDelegation.OperatorBondTokenOnly.selector, address(0)));
        vm.prank(OP);
        native.registerOperatorWithAsset(address(tnt), 1 ether);
    }
}
