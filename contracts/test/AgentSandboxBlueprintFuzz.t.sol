// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BlueprintFixture} from "./BlueprintFixture.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";

/// Fuzz: assignment never picks a full or foreign operator; ids are validated the same way always.
contract AgentSandboxBlueprintFuzzTest is BlueprintFixture {
    uint256 internal constant N = 4;

    function setUp() public {
        tangle = newTangle();
        bsm = new AgentSandboxBlueprint(false, false);
        bp = newBlueprint(address(bsm));
        // Operators 0..N-1 serve; N..N+1 are registered with big capacity but not in the service.
        for (uint256 i = 0; i < N + 2; i++) {
            register(bp, operatorAt(i), abi.encode(uint32(i < N ? 1 : 1000)));
        }
        sid = newService(bp, USER, ops(N), "");
    }

    function testFuzz_assignment_neverFullNeverForeign(uint256 seed, uint8[N] memory caps, uint8 creates) public {
        uint256 total = 0;
        vm.startPrank(DEVELOPER);
        for (uint256 i = 0; i < N; i++) {
            uint32 cap = uint32(bound(caps[i], 1, 4));
            bsm.setOperatorCapacity(operatorAt(i), cap);
            total += cap;
        }
        vm.stopPrank();
        uint256 n = bound(creates, 1, total);
        for (uint256 k = 0; k < n; k++) {
            vm.prevrandao(keccak256(abi.encode(seed, k)));
            uint256[N] memory freeBefore;
            for (uint256 i = 0; i < N; i++) {
                (uint32 a, uint32 r, uint32 c) = bsm.getOperatorLoad(operatorAt(i));
                freeBefore[i] = c - a - r;
            }
            (, address op) = submitCreate(USER, abi.encode(createReq("x")));
            vm.assertTrue(tangle.isServiceOperator(sid, op), "a service operator");
            uint256 idx = uint160(op) - 0x1000;
            vm.assertTrue(idx < N, "never a non-service operator");
            vm.assertTrue(freeBefore[idx] > 0, "never an operator at capacity");
            // Half the creates complete, so active and reserved slots both count.
            if (k % 2 == 0) {
                vm.prank(op);
                // k < 256.
                // forge-lint: disable-next-line(unsafe-typecast)
                tangle.submitResult(sid, uint64(k), abi.encode(string(abi.encodePacked("sb-", seed, k)), "{}"));
            }
        }
        for (uint256 i = 0; i < N; i++) {
            (uint32 a, uint32 r, uint32 c) = bsm.getOperatorLoad(operatorAt(i));
            vm.assertTrue(a + r <= c, "within capacity");
        }
        if (n == total) {
            bytes memory inputs = abi.encode(createReq("full"));
            expectManagerRevert(address(bsm), abi.encodeWithSelector(AgentSandboxBlueprint.NoOperatorCapacity.selector, sid));
            vm.prank(USER);
            tangle.submitJob(sid, 0, inputs);
        }
    }

    /// A create result records the id exactly when it is 1..255 bytes and not already active.
    function testFuzz_sandboxIdValidation(bytes memory id, bool tupleOutput) public {
        (uint64 callId, address op) = submitCreate(USER, abi.encode(createReq("x")));
        bytes memory out = abi.encode(string(id), "{}");
        if (tupleOutput) out = abi.encodePacked(bytes32(uint256(0x20)), out);
        vm.prank(op);
        tangle.submitResult(sid, callId, out);
        bool valid = id.length > 0 && id.length <= 255;
        vm.assertEq(bsm.isSandboxActive(string(id)), valid, "recorded iff valid");
        vm.assertEq(bsm.totalActiveSandboxes(), valid ? 1 : 0, "count");
        if (!valid) return;
        // The delete job accepts the same id in both encodings; only the owner may delete.
        bytes memory del = tupleOutput ? abi.encodePacked(bytes32(uint256(0x20)), abi.encode(string(id))) : abi.encode(string(id));
        vm.prank(USER);
        uint64 d = tangle.submitJob(sid, 1, del);
        vm.prank(op);
        tangle.submitResult(sid, d, abi.encode("{}"));
        vm.assertFalse(bsm.isSandboxActive(string(id)), "deleted");
    }

    /// Garbage job inputs never get through: a named refusal, nothing recorded.
    function testFuzz_garbageInputsRefused(bytes memory junk, uint8 job) public {
        job = uint8(bound(job, 0, 2));
        // the first word of junk.
        // forge-lint: disable-next-line(unsafe-typecast)
        vm.assume(junk.length < 64 || uint256(bytes32(junk)) != 0x20); // not a plausible tuple
        vm.prank(USER);
        (bool ok, bytes memory ret) = address(tangle).call(abi.encodeCall(tangle.submitJob, (sid, job, junk)));
        vm.assertFalse(ok, "refused");
        vm.assertTrue(ret.length >= 4, "a named error, never an empty revert");
        vm.assertEq(tangle.getJobCall(sid, 0).createdAt, 0, "nothing recorded");
    }
}
