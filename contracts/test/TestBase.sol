// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// The few forge cheatcodes these tests use (no forge-std here: see docs/toolchain.md).
interface Vm {
    struct Log {
        bytes32[] topics;
        bytes data;
        address emitter;
    }

    function prank(address sender) external;
    function startPrank(address sender) external;
    function stopPrank() external;
    function deal(address who, uint256 amount) external;
    function roll(uint256 blockNumber) external;
    function warp(uint256 timestamp) external;
    function prevrandao(bytes32 value) external;
    function assume(bool condition) external pure;
    function addr(uint256 privateKey) external pure returns (address);
    function label(address who, string calldata name) external;
    function expectRevert() external;
    function expectRevert(bytes4 selector) external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData, address emitter) external;
    function snapshotState() external returns (uint256);
    function revertToState(uint256 snapshotId) external returns (bool);
    function mockCall(address callee, bytes calldata data, bytes calldata returnData) external;
    function recordLogs() external;
    function getRecordedLogs() external returns (Log[] memory);
    function assertTrue(bool condition, string calldata err) external pure;
    function assertFalse(bool condition, string calldata err) external pure;
    function assertEq(uint256 a, uint256 b, string calldata err) external pure;
    function assertEq(address a, address b, string calldata err) external pure;
    function assertEq(bytes32 a, bytes32 b, string calldata err) external pure;
    function assertEq(string calldata a, string calldata b, string calldata err) external pure;
    function assertEq(bytes calldata a, bytes calldata b, string calldata err) external pure;
    function assertEq(bool a, bool b, string calldata err) external pure;
}

/// Tiny base: the cheatcode handle and a couple of helpers forge-std would otherwise give.
abstract contract TestBase {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    /// Maps x into [lo, hi] (inclusive) without discarding fuzz runs.
    function bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        if (hi <= lo) return lo;
        return lo + (x % (hi - lo + 1));
    }

    /// A 65-byte uncompressed-looking secp256k1 key (0x04 || X || Y); LocalTangle checks only the shape.
    function fakeKey(uint256 seed) internal pure returns (bytes memory) {
        return abi.encodePacked(bytes1(0x04), keccak256(abi.encode(seed, 1)), keccak256(abi.encode(seed, 2)));
    }

    /// Counts recorded logs with the given topic0 (and emitter).
    function countLogs(Vm.Log[] memory logs, address emitter, bytes32 topic0) internal pure returns (uint256 n) {
        for (uint256 i = 0; i < logs.length; i++) {
            if (logs[i].emitter == emitter && logs[i].topics.length > 0 && logs[i].topics[0] == topic0) n++;
        }
    }
}
