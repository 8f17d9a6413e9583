// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TestBase, Vm} from "./TestBase.sol";
import {TangleFixture} from "./TangleFixture.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";

/// Drives random create/result/delete sequences through LocalTangle, keeping its own ledger.
contract SandboxHandler is TestBase {
    LocalTangle public immutable tangle;
    AgentSandboxBlueprint public immutable bsm;
    uint64 public immutable sid;
    address public immutable user;
    address[] public operators;

    struct Open {
        uint64 callId;
        address op; // assigned (create) or holder (delete)
        string id;
    }

    Open[] public openCreates;
    Open[] public openDeletes;
    string[] public live;
    uint256 public idCounter;

    constructor(LocalTangle t, AgentSandboxBlueprint b, uint64 s, address u, address[] memory ops) {
        tangle = t;
        bsm = b;
        sid = s;
        user = u;
        operators = ops;
    }

    function liveCount() external view returns (uint256) {
        return live.length;
    }

    function openCreateCount() external view returns (uint256) {
        return openCreates.length;
    }

    function operatorCount() external view returns (uint256) {
        return operators.length;
    }

    function create(uint256 seed) external {
        vm.prevrandao(bytes32(seed));
        AgentSandboxBlueprint.SandboxCreateRequest memory r;
        r.name = "inv";
        vm.recordLogs();
        vm.prank(user);
        try tangle.submitJob(sid, 0, abi.encode(r)) returns (uint64 callId) {
            Vm.Log[] memory logs = vm.getRecordedLogs();
            address op;
            for (uint256 i = 0; i < logs.length; i++) {
                if (logs[i].topics[0] == AgentSandboxBlueprint.OperatorAssigned.selector) {
                    op = address(uint160(uint256(logs[i].topics[3])));
                }
            }
            openCreates.push(Open(callId, op, ""));
        } catch {} // no capacity left: fine
    }

    /// Completes an open create with a good id, a duplicate, an empty id, junk, or from a
    /// wrong operator, so the ledger only counts what the contract should have recorded.
    function completeCreate(uint256 pick, uint8 mode) external {
        if (openCreates.length == 0) return;
        uint256 i = pick % openCreates.length;
        Open memory c = openCreates[i];
        openCreates[i] = openCreates[openCreates.length - 1];
        openCreates.pop();
        mode = mode % 5;
        string memory id = string(abi.encodePacked("sb-", vm_toString(idCounter++)));
        bytes memory out = abi.encode(id, "{}");
        address sender = c.op;
        bool records = true;
        if (mode == 1 && live.length > 0) {
            out = abi.encode(live[pick % live.length], "{}");
            records = false;
        } else if (mode == 2) {
            out = abi.encode("", "{}");
            records = false;
        } else if (mode == 3) {
            out = hex"0bad";
            records = false;
        } else if (mode == 4) {
            sender = operators[(uint160(c.op) + 1) % operators.length];
            records = sender == c.op;
        }
        vm.prank(sender);
        tangle.submitResult(sid, c.callId, out);
        if (records) live.push(id);
    }

    function remove(uint256 pick) external {
        if (live.length == 0) return;
        uint256 i = pick % live.length;
        string memory id = live[i];
        for (uint256 k = 0; k < openDeletes.length; k++) {
            if (keccak256(bytes(openDeletes[k].id)) == keccak256(bytes(id))) return; // already pending
        }
        vm.prank(user);
        uint64 callId = tangle.submitJob(sid, 1, abi.encode(id));
        openDeletes.push(Open(callId, bsm.getSandboxOperator(id), id));
    }

    function completeDelete(uint256 pick) external {
        if (openDeletes.length == 0) return;
        uint256 i = pick % openDeletes.length;
        Open memory d = openDeletes[i];
        openDeletes[i] = openDeletes[openDeletes.length - 1];
        openDeletes.pop();
        vm.prank(d.op);
        tangle.submitResult(sid, d.callId, abi.encode("{}"));
        for (uint256 k = 0; k < live.length; k++) {
            if (keccak256(bytes(live[k])) == keccak256(bytes(d.id))) {
                live[k] = live[live.length - 1];
                live.pop();
                break;
            }
        }
    }

    function vm_toString(uint256 v) internal pure returns (bytes memory s) {
        if (v == 0) return "0";
        while (v > 0) {
            s = abi.encodePacked(bytes1(uint8(48 + (v % 10))), s);
            v /= 10;
        }
    }
}

/// Invariant: the contract's active counters equal the sandboxes it has recorded.
contract AgentSandboxBlueprintInvariantTest is TangleFixture {
    SandboxHandler internal handler;
    AgentSandboxBlueprint internal bsm;
    uint64 internal sid;

    function setUp() public {
        tangle = new LocalTangle();
        bsm = new AgentSandboxBlueprint(false, false);
        uint64 bp = newBlueprint(address(bsm));
        address[] memory list = ops(3);
        for (uint256 i = 0; i < 3; i++) {
            register(bp, list[i], abi.encode(uint32(3)));
        }
        sid = newService(bp, USER, list, "");
        handler = new SandboxHandler(tangle, bsm, sid, USER, list);
    }

    function targetContracts() public view returns (address[] memory t) {
        t = new address[](1);
        t[0] = address(handler);
    }

    /// The handler's paths really create and delete (so the invariant is not vacuous).
    function test_handlerPaths() public {
        handler.create(1);
        handler.create(2);
        handler.create(3);
        handler.completeCreate(0, 0); // good id
        handler.completeCreate(0, 1); // duplicate of the live one
        vm.assertEq(handler.liveCount(), 1, "one live");
        vm.assertEq(handler.openCreateCount(), 1, "one open");
        handler.remove(0);
        handler.completeDelete(0);
        vm.assertEq(handler.liveCount(), 0, "deleted");
        invariant_activeCountersEqualRecordedSandboxes();
    }

    function invariant_activeCountersEqualRecordedSandboxes() public view {
        uint256 live = handler.liveCount();
        vm.assertEq(bsm.totalActiveSandboxes(), live, "total == ledger");
        uint256 sumActive;
        uint256 sumService;
        uint256 sumReserved;
        for (uint256 i = 0; i < handler.operatorCount(); i++) {
            address op = handler.operators(i);
            (uint32 a, uint32 r, uint32 c) = bsm.getOperatorLoad(op);
            vm.assertTrue(a + r <= c, "within capacity");
            sumActive += a;
            sumReserved += r;
            sumService += bsm.serviceOperatorActive(sid, op);
        }
        vm.assertEq(sumActive, live, "sum of operator counters == recorded sandboxes");
        vm.assertEq(sumService, live, "sum of service counters == recorded sandboxes");
        vm.assertEq(sumReserved, handler.openCreateCount(), "reservations == open creates");
        for (uint256 k = 0; k < live; k++) {
            vm.assertTrue(bsm.isSandboxActive(handler.live(k)), "every ledger id is active");
        }
    }
}
