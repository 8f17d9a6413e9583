// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TestBase} from "./TestBase.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {LocalStaking} from "../src/tangle/LocalStaking.sol";
import {IMultiAssetDelegation} from "../src/tangle/IMultiAssetDelegation.sol";

/// Builds a LocalTangle world: a blueprint, registered operators, an active service.
abstract contract TangleFixture is TestBase {
    LocalTangle internal tangle;
    LocalStaking internal staking;
    /// The staking contract's minimum self-stake in these tests.
    uint256 internal constant MIN_STAKE = 1 ether;
    mapping(address => bool) internal staked;
    address internal constant DEVELOPER = address(0xD3);
    address internal constant USER = address(0xA11CE);
    address internal constant STRANGER = address(0xBAD);

    function operatorAt(uint256 i) internal pure returns (address) {
        // small test addresses.
        // forge-lint: disable-next-line(unsafe-typecast)
        return address(uint160(0x1000 + i));
    }

    /// A LocalTangle over a fresh LocalStaking (the real core is initialized with its staking).
    function newTangle() internal returns (LocalTangle t) {
        staking = new LocalStaking(MIN_STAKE, address(0));
        t = new LocalTangle(IMultiAssetDelegation(address(staking)));
        staking.setTangle(address(t));
    }

    /// Makes `op` an active operator in the staking contract (the step before registering).
    function stake(address op, uint256 amount) internal {
        staked[op] = true;
        vm.deal(op, op.balance + amount);
        vm.prank(op);
        staking.registerOperator{value: amount}();
    }

    function newBlueprint(address manager) internal returns (uint64 id) {
        vm.prank(DEVELOPER);
        id = tangle.createBlueprint(definition(manager, 5));
    }

    /// A minimal valid definition: `jobs` jobs with empty schemas, one container source.
    function definition(address manager, uint256 jobs) internal pure returns (ITangleTypes.BlueprintDefinition memory def) {
        def.metadataUri = "ipfs://blueprint";
        def.metadataHash = keccak256("ipfs://blueprint");
        def.manager = manager;
        def.metadata.name = "test blueprint";
        def.jobs = new ITangleTypes.JobDefinition[](jobs);
        for (uint256 i = 0; i < jobs; i++) {
            def.jobs[i].name = "job";
        }
        def.sources = new ITangleTypes.BlueprintSource[](1);
        def.sources[0].container = ITangleTypes.ImageRegistrySource("local", "agent-sandbox", "test");
        def.sources[0].binaries = new ITangleTypes.BlueprintBinary[](1);
        def.sources[0].binaries[0].name = "agent-sandbox";
        def.sources[0].binaries[0].sha256 = keccak256("image");
        def.supportedMemberships = new ITangleTypes.MembershipModel[](1);
    }

    /// The revert a manager's refusal of a reverting hook arrives as through Tangle.
    function expectManagerRevert(address manager, bytes memory reason) internal {
        vm.expectRevert(abi.encodeWithSelector(ITangle.ManagerReverted.selector, manager, reason));
    }

    /// Registers `op` for a blueprint, staking the minimum first when it is not yet an operator.
    function register(uint64 blueprintId, address op, bytes memory inputs) internal {
        // No call here: a vm.expectRevert before register() must meet registerOperator itself.
        if (!staked[op]) stake(op, MIN_STAKE);
        vm.prank(op);
        tangle.registerOperator(blueprintId, fakeKey(uint160(op)), "http://127.0.0.1:9000", inputs);
    }

    function minimalApproval(uint64 requestId) internal pure returns (ITangleTypes.ApprovalParams memory p) {
        p.requestId = requestId;
        p.securityCommitments = new ITangleTypes.AssetSecurityCommitment[](0);
        p.teeCommitments = new ITangleTypes.TeeAttestationCommitment[](0);
    }

    /// Requests a service from `ops` as `requester` and has every operator approve it.
    function newService(uint64 blueprintId, address requester, address[] memory list, bytes memory config)
        internal
        returns (uint64 serviceId)
    {
        vm.prank(requester);
        uint64 requestId = tangle.requestService(blueprintId, list, config, new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        serviceId = tangle.serviceCount();
        for (uint256 i = 0; i < list.length; i++) {
            vm.prank(list[i]);
            tangle.approveService(minimalApproval(requestId));
        }
        vm.assertTrue(tangle.isServiceActive(serviceId), "service active");
    }

    function ops(uint256 n) internal pure returns (address[] memory list) {
        list = new address[](n);
        for (uint256 i = 0; i < n; i++) {
            list[i] = operatorAt(i);
        }
    }
}
