// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TangleFixture} from "./TangleFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {LocalTangleState} from "../src/tangle/LocalTangleState.sol";
import {BlueprintServiceManagerBase} from "../src/tangle/BlueprintServiceManagerBase.sol";

/// A manager whose answers the tests choose, to drive LocalTangle's failure paths.
contract KnobManager is BlueprintServiceManagerBase {
    uint32 public required = 1;
    bool public aggregationReverts;
    bool public resultReverts;
    bool public resultBurnsGas;
    bool public callReverts;
    bool public callBurnsGas;
    uint256 public results;
    uint256 public resultSlots;
    mapping(uint256 => uint256) private _sink;
    address[] public initCallers;

    error NotToday(uint64 serviceId);

    function set(uint32 r, bool aggRev, bool resRev, bool burn) external {
        required = r;
        aggregationReverts = aggRev;
        resultReverts = resRev;
        resultBurnsGas = burn;
    }

    /// onJobResult writes this many fresh slots (~22k gas each) before it counts.
    function setResultSlots(uint256 n) external {
        resultSlots = n;
    }

    /// getMinOperatorStake answers (false, minStake) when set, the default (true, 0) otherwise.
    uint256 public minStake;

    function setMinStake(uint256 m) external {
        minStake = m;
    }

    function getMinOperatorStake() external view override returns (bool, uint256) {
        return (minStake == 0, minStake);
    }

    function setCall(bool reverts, bool burns) external {
        callReverts = reverts;
        callBurnsGas = burns;
    }

    function getRequiredResultCount(uint64, uint8) external view override returns (uint32) {
        return required;
    }

    function requiresAggregation(uint64, uint8) external view override returns (bool) {
        require(!aggregationReverts, "no answer");
        return false;
    }

    function onServiceInitialized(uint64, uint64, uint64, address, address[] calldata callers, uint64)
        external
        override
        onlyFromTangle
    {
        initCallers = callers;
    }

    function initCallerCount() external view returns (uint256) {
        return initCallers.length;
    }

    function onJobCall(uint64 serviceId, uint8, uint64, bytes calldata) external payable override onlyFromTangle {
        if (callReverts) revert NotToday(serviceId);
        if (callBurnsGas) {
            while (true) {}
        }
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
        for (uint256 i = 0; i < resultSlots; i++) {
            _sink[i] = 1;
        }
        results++;
    }
}

/// LocalTangle's blueprints, operators and services, against the real core's behaviour.
contract LocalTangleTest is TangleFixture {
    BlueprintServiceManagerBase internal toy;
    uint64 internal bp;

    function setUp() public {
        tangle = newTangle();
        toy = new BlueprintServiceManagerBase();
        bp = newBlueprint(address(toy));
        register(bp, operatorAt(0), "");
        register(bp, operatorAt(1), "");
    }

    function request(address[] memory list, uint64 ttl) internal returns (uint64 rid) {
        vm.prank(USER);
        rid = tangle.requestService(bp, list, "", new address[](0), ttl, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
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
        vm.assertEq(tangle.blueprintCount(), 2, "count");
    }

    /// getBlueprint answers the real static struct (the stand-in used to answer a 4-tuple with
    /// the metadata URI, which a reader of the real layout cannot decode).
    function test_getBlueprint_isTheRealStruct() public view {
        ITangleTypes.Blueprint memory b = tangle.getBlueprint(bp);
        vm.assertEq(b.owner, DEVELOPER, "owner");
        vm.assertEq(b.manager, address(toy), "manager");
        vm.assertEq(b.createdAt, block.timestamp, "createdAt");
        vm.assertEq(uint8(b.membership), 0, "Fixed without a config");
        vm.assertEq(uint8(b.pricing), 0, "PayOnce without a config");
        vm.assertTrue(b.active, "active");
        (bool ok, bytes memory ret) = address(tangle).staticcall(abi.encodeCall(tangle.getBlueprint, (bp)));
        vm.assertTrue(ok, "answers");
        vm.assertEq(ret.length, 6 * 32, "six static words, no dynamic tail");
        vm.assertEq(tangle.getBlueprint(99).manager, address(0), "an unknown id answers zeros");
    }

    function test_createBlueprint_validatesTheDefinition() public {
        ITangleTypes.BlueprintDefinition memory d = definition(address(0), 1);
        d.metadataUri = "";
        vm.expectRevert(ITangle.BlueprintMetadataRequired.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.metadataHash = bytes32(0);
        vm.expectRevert(ITangle.BlueprintMetadataHashRequired.selector);
        tangle.createBlueprint(d);
        vm.expectRevert(ITangle.InvalidState.selector);
        tangle.createBlueprint(definition(address(0), 0));
        d = definition(address(0), 1);
        d.supportedMemberships = new ITangleTypes.MembershipModel[](0);
        vm.expectRevert(ITangle.BlueprintMembershipRequired.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.sources = new ITangleTypes.BlueprintSource[](0);
        vm.expectRevert(ITangle.BlueprintSourcesRequired.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.sources[0].binaries = new ITangleTypes.BlueprintBinary[](0);
        vm.expectRevert(ITangle.BlueprintBinaryRequired.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.sources[0].binaries[0].sha256 = bytes32(0);
        vm.expectRevert(ITangle.BlueprintBinaryHashRequired.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.hasConfig = true;
        d.config.pricing = ITangleTypes.PricingModel.Subscription;
        vm.expectRevert(ITangle.InvalidState.selector);
        tangle.createBlueprint(d);
        d = definition(address(0), 1);
        d.jobs[0].paramsSchema = hex"020001";
        vm.expectRevert(abi.encodeWithSelector(LocalTangleState.LocalUnsupported.selector, "schema"));
        tangle.createBlueprint(d);
    }

    /// onBlueprintCreated is a reverting hook: the manager's refusal arrives wrapped.
    function test_createBlueprint_managerRefusalIsWrapped() public {
        expectManagerRevert(
            address(toy),
            abi.encodeWithSelector(BlueprintServiceManagerBase.BlueprintAlreadyCreated.selector, 0, address(tangle))
        );
        newBlueprint(address(toy));
        vm.expectRevert(
            abi.encodeWithSelector(BlueprintServiceManagerBase.BlueprintAlreadyCreated.selector, 0, address(tangle))
        );
        toy.onBlueprintCreated(9, STRANGER, STRANGER);
    }

    // ── operators ───────────────────────────────────────────────────────────────────────────

    /// The rpcAddress rides the event only: getOperatorPreferences answers it empty, as the
    /// real router (which never stores it) does.
    function test_registerOperator_bothOverloads() public {
        address op = operatorAt(7);
        stake(op, MIN_STAKE);
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.OperatorRegistered(bp, op, fakeKey(7), "http://op7");
        vm.prank(op);
        tangle.registerOperator(bp, fakeKey(7), "http://op7");
        vm.assertTrue(tangle.isOperatorRegistered(bp, op), "registered (3-arg)");
        ITangleTypes.OperatorPreferences memory prefs = tangle.getOperatorPreferences(bp, op);
        vm.assertEq(prefs.ecdsaPublicKey, fakeKey(7), "key");
        vm.assertEq(prefs.rpcAddress, "", "rpc is not stored");
        register(bp, operatorAt(8), abi.encode(uint32(5)));
        vm.assertTrue(tangle.isOperatorRegistered(bp, operatorAt(8)), "registered (4-arg)");
    }

    function test_registerOperator_refusals() public {
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorAlreadyRegistered.selector, bp, operatorAt(0)));
        register(bp, operatorAt(0), "");
        stake(operatorAt(9), MIN_STAKE);
        vm.expectRevert(ITangle.InvalidOperatorKey.selector);
        vm.prank(operatorAt(9));
        tangle.registerOperator(bp, hex"0102", "x");
        vm.expectRevert(abi.encodeWithSelector(ITangle.DuplicateOperatorKey.selector, bp, keccak256(fakeKey(0x1000))));
        vm.prank(operatorAt(9));
        tangle.registerOperator(bp, fakeKey(0x1000), "x");
        vm.expectRevert(abi.encodeWithSelector(ITangle.BlueprintNotFound.selector, 42));
        vm.prank(operatorAt(9));
        tangle.registerOperator(42, fakeKey(9), "x");
    }

    /// Operators._registerOperator: active in the staking contract first (OperatorNotActive),
    /// then a total stake of at least the manager's getMinOperatorStake, else the staking
    /// contract's minOperatorStake (InsufficientStake(operator, required, actual)).
    function test_registerOperator_requiresStake() public {
        address op = operatorAt(20);
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotActive.selector, op));
        vm.prank(op);
        tangle.registerOperator(bp, fakeKey(20), "x");

        KnobManager m = new KnobManager();
        m.setMinStake(5 ether);
        uint64 b2 = newBlueprint(address(m));
        stake(op, MIN_STAKE);
        vm.expectRevert(abi.encodeWithSelector(ITangle.InsufficientStake.selector, op, 5 ether, 1 ether));
        vm.prank(op);
        tangle.registerOperator(b2, fakeKey(20), "x");
        // The blueprint's default minimum is the staking contract's (met at staking time).
        vm.prank(op);
        tangle.registerOperator(bp, fakeKey(20), "x");

        vm.deal(op, 4 ether);
        vm.prank(op);
        staking.increaseStake{value: 4 ether}();
        vm.prank(op);
        tangle.registerOperator(b2, fakeKey(20), "x");
        vm.assertTrue(tangle.isOperatorRegistered(b2, op), "registered with 5 ether");
    }

    function test_updateOperatorPreferences_emitsTheNewAddress() public {
        vm.expectRevert(ITangle.OperatorRpcAddressRequired.selector);
        vm.prank(operatorAt(0));
        tangle.updateOperatorPreferences(bp, "", "");
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.OperatorPreferencesUpdated(bp, operatorAt(0), fakeKey(0x1000), "http://moved");
        vm.prank(operatorAt(0));
        tangle.updateOperatorPreferences(bp, "", "http://moved");
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, STRANGER));
        vm.prank(STRANGER);
        tangle.updateOperatorPreferences(bp, "", "http://x");
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
        vm.expectEmit(true, true, true, true, address(tangle));
        emit ITangle.ServiceRequested(0, bp, USER, ITangleTypes.ConfidentialityPolicy.Any);
        uint64 rid = request(ops(2), 0);
        vm.assertEq(rid, 0, "request id");
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertFalse(tangle.isServiceActive(0), "not active after one of two");
        vm.assertEq(tangle.getServiceRequest(rid).approvalCount, 1, "one approval");
        vm.expectRevert(abi.encodeWithSelector(ITangle.AlreadyApproved.selector, rid, operatorAt(0)));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));

        vm.expectEmit(true, true, true, true, address(tangle));
        emit ITangle.ServiceActivated(0, rid, bp, ITangleTypes.ConfidentialityPolicy.Any);
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
        vm.assertTrue(tangle.isServiceActive(0), "active");
        vm.assertTrue(tangle.getServiceRequest(rid).activated, "request activated");
        vm.assertTrue(tangle.isServiceOperator(0, operatorAt(1)), "operator");
        vm.assertFalse(tangle.isServiceOperator(0, STRANGER), "stranger");
        vm.assertEq(tangle.getServiceOperators(0).length, 2, "operators");
        vm.assertTrue(tangle.isPermittedCaller(0, USER), "requester permitted");
        ITangleTypes.Service memory s = tangle.getService(0);
        vm.assertEq(s.owner, USER, "owner");
        vm.assertEq(uint8(s.status), 1, "status");
        vm.assertEq(s.minOperators, 1, "min operators: the blueprint's (1 by default)");
        vm.expectRevert(abi.encodeWithSelector(ITangle.AlreadyApproved.selector, rid, operatorAt(1)));
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
    }

    /// A request its operators never approved never activates, and expires after the grace.
    function test_requestNobodyApproved_neverActivates() public {
        uint64 rid = request(ops(1), 0);
        vm.assertEq(tangle.serviceCount(), 0, "no service");
        vm.assertFalse(tangle.isServiceActive(0), "nothing active");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotFound.selector, 0));
        vm.prank(USER);
        tangle.submitJob(0, 0, "");
        vm.warp(block.timestamp + 1 hours + 1);
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestExpiredError.selector, rid));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
    }

    /// onServiceInitialized gets the requester first, then the requested permitted callers.
    function test_onServiceInitialized_callersStartWithTheRequester() public {
        KnobManager m = new KnobManager();
        uint64 b2 = newBlueprint(address(m));
        register(b2, operatorAt(0), "");
        address[] memory callers = new address[](1);
        callers[0] = STRANGER;
        vm.prank(USER);
        uint64 rid = tangle.requestService(b2, ops(1), "", callers, 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertEq(m.initCallerCount(), 2, "requester + one");
        vm.assertEq(m.initCallers(0), USER, "requester first");
        vm.assertEq(m.initCallers(1), STRANGER, "then the listed callers");
    }

    function test_requestService_refusals() public {
        vm.startPrank(USER);
        vm.expectRevert(ITangle.NoOperators.selector);
        tangle.requestService(bp, new address[](0), "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        address[] memory bad = new address[](1);
        bad[0] = STRANGER;
        vm.expectRevert(abi.encodeWithSelector(ITangle.OperatorNotRegistered.selector, bp, STRANGER));
        tangle.requestService(bp, bad, "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        address[] memory dup = new address[](2);
        dup[0] = operatorAt(0);
        dup[1] = operatorAt(0);
        vm.expectRevert(ITangle.InvalidState.selector);
        tangle.requestService(bp, dup, "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        vm.expectRevert(abi.encodeWithSelector(ITangle.PaymentTooSmall.selector, 5, 100));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 5, ITangleTypes.ConfidentialityPolicy.Any);
        vm.expectRevert(abi.encodeWithSelector(ITangle.InvalidMsgValue.selector, 1000, 0));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(0), 1000, ITangleTypes.ConfidentialityPolicy.Any);
        vm.expectRevert(abi.encodeWithSelector(ITangle.TokenNotAllowed.selector, address(1)));
        tangle.requestService(bp, ops(1), "", new address[](0), 0, address(1), 1000, ITangleTypes.ConfidentialityPolicy.Any);
        vm.expectRevert(abi.encodeWithSelector(ITangle.TTLBelowMinimum.selector, 100, 3600));
        tangle.requestService(bp, ops(1), "", new address[](0), 100, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        // An out-of-range confidentiality fails ABI decoding (an enum), with no error data.
        (bool ok, bytes memory ret) = address(tangle).call(
            abi.encodeWithSignature(
                "requestService(uint64,address[],bytes,address[],uint64,address,uint256,uint8)",
                bp, ops(1), bytes(""), new address[](0), uint64(0), address(0), uint256(0), uint8(4)
            )
        );
        vm.assertFalse(ok, "refused");
        vm.assertEq(ret.length, 0, "bare revert");
        vm.stopPrank();
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestNotFound.selector, 9));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(9));
    }

    function test_approve_byNonListedOperatorRefused_andReject() public {
        uint64 rid = request(ops(1), 0);
        vm.expectRevert(ITangle.Unauthorized.selector);
        vm.prank(operatorAt(1));
        tangle.approveService(minimalApproval(rid));
        vm.expectRevert(ITangle.Unauthorized.selector);
        vm.prank(operatorAt(1));
        tangle.rejectService(rid);
        vm.expectEmit(true, true, false, true, address(tangle));
        emit ITangle.ServiceRejected(rid, operatorAt(0));
        vm.prank(operatorAt(0));
        tangle.rejectService(rid);
        vm.assertTrue(tangle.getServiceRequest(rid).rejected, "rejected");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceRequestAlreadyProcessed.selector, rid));
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertEq(tangle.serviceCount(), 0, "never activated");
    }

    function test_reject_refundsTheRequester() public {
        vm.deal(USER, 1 ether);
        vm.prank(USER);
        uint64 rid = tangle.requestService{value: 1000}(
            bp, ops(1), "", new address[](0), 0, address(0), 1000, ITangleTypes.ConfidentialityPolicy.Any
        );
        vm.assertEq(USER.balance, 1 ether - 1000, "paid");
        vm.prank(operatorAt(0));
        tangle.rejectService(rid);
        vm.assertEq(USER.balance, 1 ether, "refunded");
    }

    function test_bls_and_tee_refusedLocally() public {
        uint64 rid = request(ops(1), 0);
        ITangleTypes.ApprovalParams memory p = minimalApproval(rid);
        p.blsPubkey[0] = 1;
        vm.expectRevert(abi.encodeWithSelector(LocalTangleState.LocalUnsupported.selector, "bls"));
        vm.prank(operatorAt(0));
        tangle.approveService(p);
    }

    /// isServiceActive is the status only (as on the real router); jobs after the TTL are refused.
    function test_ttl_expiresService() public {
        uint64 rid = request(ops(1), 3600);
        vm.prank(operatorAt(0));
        tangle.approveService(minimalApproval(rid));
        vm.assertTrue(tangle.isServiceActive(0), "active");
        vm.warp(block.timestamp + 3601);
        vm.assertTrue(tangle.isServiceActive(0), "still Active by status");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceExpired.selector, 0));
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
        vm.assertEq(uint8(tangle.getService(sid).status), 2, "terminated");
        vm.assertEq(tangle.getService(sid).terminatedAt, block.timestamp, "terminatedAt");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotActive.selector, sid));
        vm.prank(USER);
        tangle.terminateService(sid);
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotActive.selector, sid));
        vm.prank(USER);
        tangle.submitJob(sid, 0, "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.ServiceNotFound.selector, 77));
        vm.prank(USER);
        tangle.terminateService(77);
        vm.assertEq(tangle.getService(77).owner, address(0), "an unknown id answers zeros");
    }

    function test_permittedCallers_ownerAddsAndRemoves() public {
        uint64 sid = newService(bp, USER, ops(1), "");
        vm.expectRevert(abi.encodeWithSelector(ITangle.NotServiceOwner.selector, sid, STRANGER));
        vm.prank(STRANGER);
        tangle.addPermittedCaller(sid, STRANGER);
        vm.prank(USER);
        tangle.addPermittedCaller(sid, STRANGER);
        vm.assertTrue(tangle.isPermittedCaller(sid, STRANGER), "added");
        vm.prank(USER);
        tangle.removePermittedCaller(sid, STRANGER);
        vm.assertFalse(tangle.isPermittedCaller(sid, STRANGER), "removed");
    }
}
