// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TestBase} from "./TestBase.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";

/// Builds a LocalTangle world: a blueprint, registered operators, an active service.
abstract contract TangleFixture is TestBase {
    LocalTangle internal tangle;
    address internal constant DEVELOPER = address(0xD3);
    address internal constant USER = address(0xA11CE);
    address internal constant STRANGER = address(0xBAD);

    function operatorAt(uint256 i) internal pure returns (address) {
        // small test addresses.
        // forge-lint: disable-next-line(unsafe-typecast)
        return address(uint160(0x1000 + i));
    }

    function newBlueprint(address manager) internal returns (uint64 id) {
        vm.prank(DEVELOPER);
        id = tangle.createBlueprint("ipfs://blueprint", manager);
    }

    function register(uint64 blueprintId, address op, bytes memory inputs) internal {
        vm.prank(op);
        tangle.registerOperator(blueprintId, fakeKey(uint160(op)), "http://127.0.0.1:9000", inputs);
    }

    function minimalApproval(uint64 requestId) internal pure returns (ITangle.ApprovalParams memory p) {
        p.requestId = requestId;
        p.securityCommitments = new ITangle.AssetSecurityCommitment[](0);
        p.teeCommitments = new ITangle.TeeAttestationCommitment[](0);
    }

    /// Requests a service from `ops` as `requester` and has every operator approve it.
    function newService(uint64 blueprintId, address requester, address[] memory list, bytes memory config)
        internal
        returns (uint64 serviceId)
    {
        vm.prank(requester);
        uint64 requestId = tangle.requestService(blueprintId, list, config, new address[](0), 0, address(0), 0, 0);
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
