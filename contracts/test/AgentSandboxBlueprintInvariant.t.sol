// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TestBase, Vm} from "./TestBase.sol";
import {TangleFixture} from "./TangleFixture.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {ITangleTypes} from "../src/tangle/ITangleTypes.sol";
import {LocalTangle} from "../src/tangle/LocalTangle.sol";
import {AgentSandboxBlueprint} from "../src/AgentSandboxBlueprint.sol";
import {AgentSandboxJobCodec} from "../src/AgentSandboxJobCodec.sol";

/// Drives random create / result (good, bad, from a co-operator then settled) / delete / expire /
/// give-up / gone / terminate sequences through LocalTangle, keeping its own ledger.
contract SandboxHandler is TestBase {
    LocalTangle public immutable tangle;
    AgentSandboxBlueprint public immutable bsm;
    uint64 public immutable blueprintId;
    address public immutable user;
    address[] public operators;
    uint64 public sid;
    uint64[] public endedServices;

    struct Open {
        uint64 serviceId;
        uint64 callId;
        address op; // assigned (create) or holder (delete)
        string id;
    }

    Open[] public openCreates;
    Open[] public openDeletes;
    Open[] public live;
    uint256 public idCounter;

    constructor(LocalTangle t, AgentSandboxBlueprint b, uint64 bp, uint64 s, address u, address[] memory ops) {
        tangle = t;
        bsm = b;
        blueprintId = bp;
        sid = s;
        user = u;
        operators = ops;
    }

    function liveCount() external view returns (uint256) {
        return live.length;
    }

    function liveId(uint256 i) external view returns (string memory) {
        return live[i].id;
    }

    function openCreateCount() external view returns (uint256) {
        return openCreates.length;
    }

    function operatorCount() external view returns (uint256) {
        return operators.length;
    }

    function endedCount() external view returns (uint256) {
        return endedServices.length;
    }

    /// The ledger's (active, reserved) for one operator.
    function ledger(address op) external view returns (uint256 active, uint256 reserved) {
        for (uint256 i = 0; i < live.length; i++) {
            if (live[i].op == op) active++;
        }
        for (uint256 i = 0; i < openCreates.length; i++) {
            if (openCreates[i].op == op) reserved++;
        }
    }

    function create(uint256 seed) external {
        vm.prevrandao(bytes32(seed));
        AgentSandboxJobCodec.SandboxCreateRequest memory r;
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
            openCreates.push(Open(sid, callId, op, ""));
        } catch {} // no capacity left: fine
    }

    function _takeCreate(uint256 pick) internal returns (Open memory c) {
        uint256 i = pick % openCreates.length;
        c = openCreates[i];
        openCreates[i] = openCreates[openCreates.length - 1];
        openCreates.pop();
    }

    function _isLive(string memory id) internal view returns (bool) {
        for (uint256 k = 0; k < live.length; k++) {
            if (keccak256(bytes(live[k].id)) == keccak256(bytes(id))) return true;
        }
        return false;
    }

    /// Completes an open create with a good id, a duplicate, an empty id, junk, or first from a
    /// co-operator (ignored) and then settled by the assigned one; a create of an ended service
    /// is settled and records nothing.
    function completeCreate(uint256 pick, uint8 mode) external {
        if (openCreates.length == 0) return;
        Open memory c = _takeCreate(pick);
        string memory id = string(abi.encodePacked("sb-", vm_toString(idCounter++)));
        if (c.serviceId != sid) {
            vm.prank(c.op);
            bsm.settleCall(c.serviceId, c.callId, abi.encode(id, "{}"));
            return;
        }
        mode = mode % 5;
        bytes memory out = abi.encode(id, "{}");
        bool records = true;
        if (mode == 1 && live.length > 0) {
            out = abi.encode(live[pick % live.length].id, "{}");
            records = false;
        } else if (mode == 2) {
            out = abi.encode("", "{}");
            records = false;
        } else if (mode == 3) {
            out = hex"0bad";
            records = false;
        } else if (mode == 4) {
            address other = operators[(uint160(c.op) + 1) % operators.length];
            if (other != c.op) {
                vm.prank(other);
                tangle.submitResult(sid, c.callId, abi.encode("stolen", "{}"));
                vm.prank(c.op);
                bsm.settleCall(sid, c.callId, out);
                live.push(Open(sid, c.callId, c.op, id));
                return;
            }
        }
        vm.prank(c.op);
        tangle.submitResult(sid, c.callId, out);
        if (records) live.push(Open(sid, c.callId, c.op, id));
    }

    /// Anyone, after the reservation's expiry (or once its service ended).
    function expire(uint256 pick) external {
        if (openCreates.length == 0) return;
        Open memory c = _takeCreate(pick);
        vm.warp(block.timestamp + bsm.reservationTimeout());
        bsm.releaseReservation(c.serviceId, c.callId);
    }

    /// The assigned operator gives up on a call.
    function giveUp(uint256 pick) external {
        if (openCreates.length == 0) return;
        Open memory c = _takeCreate(pick);
        vm.prank(c.op);
        bsm.releaseReservation(c.serviceId, c.callId);
    }

    function remove(uint256 pick) external {
        if (live.length == 0) return;
        Open memory s = live[pick % live.length];
        for (uint256 k = 0; k < openDeletes.length; k++) {
            if (keccak256(bytes(openDeletes[k].id)) == keccak256(bytes(s.id))) return; // already pending
        }
        vm.prank(user);
        uint64 callId = tangle.submitJob(sid, 1, abi.encode(s.id));
        openDeletes.push(Open(sid, callId, s.op, s.id));
    }

    function _dropLive(string memory id) internal {
        for (uint256 k = 0; k < live.length; k++) {
            if (keccak256(bytes(live[k].id)) == keccak256(bytes(id))) {
                live[k] = live[live.length - 1];
                live.pop();
                return;
            }
        }
    }

    function completeDelete(uint256 pick) external {
        if (openDeletes.length == 0) return;
        uint256 i = pick % openDeletes.length;
        Open memory d = openDeletes[i];
        openDeletes[i] = openDeletes[openDeletes.length - 1];
        openDeletes.pop();
        vm.prank(d.op);
        tangle.submitResult(sid, d.callId, abi.encode("{}"));
        _dropLive(d.id);
    }

    /// The holding operator stopped a sandbox for good (its delete, if pending, stays valid).
    function gone(uint256 pick) external {
        if (live.length == 0) return;
        Open memory s = live[pick % live.length];
        vm.prank(s.op);
        bsm.reportSandboxGone(s.id);
        _dropLive(s.id);
    }

    /// Ends the service (every slot it held comes back) and carries on with a fresh one.
    function terminate() external {
        if (endedServices.length >= 3) return;
        vm.prank(user);
        tangle.terminateService(sid);
        endedServices.push(sid);
        delete live;
        delete openDeletes;
        vm.prank(user);
        uint64 requestId = tangle.requestService(blueprintId, operators, "", new address[](0), 0, address(0), 0, ITangleTypes.ConfidentialityPolicy.Any);
        ITangleTypes.ApprovalParams memory p;
        p.requestId = requestId;
        p.securityCommitments = new ITangleTypes.AssetSecurityCommitment[](0);
        p.teeCommitments = new ITangleTypes.TeeAttestationCommitment[](0);
        for (uint256 i = 0; i < operators.length; i++) {
            vm.prank(operators[i]);
            tangle.approveService(p);
        }
        sid = tangle.serviceCount();
    }

    function vm_toString(uint256 v) internal pure returns (bytes memory s) {
        if (v == 0) return "0";
        while (v > 0) {
            s = abi.encodePacked(bytes1(uint8(48 + (v % 10))), s);
            v /= 10;
        }
    }
}

/// Invariants: per operator, active + reserved == capacity − free, and both equal the ledger;
/// the totals equal the sandboxes the ledger holds.
contract AgentSandboxBlueprintInvariantTest is TangleFixture {
    SandboxHandler internal handler;
    AgentSandboxBlueprint internal bsm;
    uint64 internal sid;

    function setUp() public {
        tangle = newTangle();
        bsm = new AgentSandboxBlueprint(false, false);
        uint64 bp = newBlueprint(address(bsm));
        address[] memory list = ops(3);
        for (uint256 i = 0; i < 3; i++) {
            register(bp, list[i], abi.encode(uint32(3)));
        }
        sid = newService(bp, USER, list, "");
        handler = new SandboxHandler(tangle, bsm, bp, sid, USER, list);
    }

    function targetContracts() public view returns (address[] memory t) {
        t = new address[](1);
        t[0] = address(handler);
    }

    /// The handler's paths really create, settle, expire, give up, go and terminate.
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
        handler.create(4);
        handler.completeCreate(0, 4); // a co-operator first, then settled
        handler.completeCreate(0, 0);
        vm.assertEq(handler.liveCount(), 2, "settled and completed");
        handler.create(5);
        handler.expire(0);
        handler.create(6);
        handler.giveUp(0);
        vm.assertEq(handler.openCreateCount(), 0, "none open");
        handler.gone(0);
        handler.create(7);
        handler.create(8);
        handler.completeCreate(0, 0);
        handler.terminate();
        vm.assertEq(handler.liveCount(), 0, "terminated");
        handler.completeCreate(0, 0); // settles the ended service's create
        invariant_slotsMatchTheLedger();
    }

    function invariant_slotsMatchTheLedger() public view {
        uint256 sumActive;
        uint256 sumUsed;
        uint256 sumCapacity;
        for (uint256 i = 0; i < handler.operatorCount(); i++) {
            address op = handler.operators(i);
            (uint32 a, uint32 r, uint32 c) = bsm.getOperatorLoad(op);
            (uint256 la, uint256 lr) = handler.ledger(op);
            vm.assertEq(a, la, "active == ledger");
            vm.assertEq(r, lr, "reserved == ledger");
            vm.assertTrue(a + r <= c, "within capacity");
            sumActive += a;
            sumUsed += a + r;
            sumCapacity += c;
        }
        vm.assertEq(sumCapacity - bsm.getAvailableCapacity(), sumUsed, "active + reserved == capacity - available");
        uint256 live = handler.liveCount();
        vm.assertEq(bsm.totalActiveSandboxes(), live, "total == ledger");
        vm.assertEq(sumActive, live, "sum of operator counters == recorded sandboxes");
        for (uint256 k = 0; k < live; k++) {
            vm.assertTrue(bsm.isSandboxActive(handler.liveId(k)), "every ledger id is active");
        }
    }
}
