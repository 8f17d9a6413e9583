// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {TestBase} from "./TestBase.sol";
import {ITangle} from "../src/tangle/ITangle.sol";
import {IBlueprintServiceManager} from "../src/tangle/IBlueprintServiceManager.sol";

/// Every selector and event topic of the spec's tables, against the hex the real protocol uses.
contract SelectorsTest is TestBase {
    function test_functionSelectorsMatchSpec() public pure {
        vm.assertEq(bytes32(ITangle.submitJob.selector), bytes32(bytes4(0x3413e8ee)), "submitJob");
        vm.assertEq(bytes32(ITangle.submitResult.selector), bytes32(bytes4(0x2d07e655)), "submitResult");
        vm.assertEq(bytes32(ITangle.submitResults.selector), bytes32(bytes4(0xaacdba9f)), "submitResults");
        vm.assertEq(
            bytes32(bytes4(keccak256("registerOperator(uint64,bytes,string)"))),
            bytes32(bytes4(0xd4e1ab7c)),
            "registerOperator/3"
        );
        vm.assertEq(
            bytes32(bytes4(keccak256("registerOperator(uint64,bytes,string,bytes)"))),
            bytes32(bytes4(0x7324e916)),
            "registerOperator/4"
        );
        vm.assertEq(bytes32(ITangle.requestService.selector), bytes32(bytes4(0xc841e26e)), "requestService");
        vm.assertEq(bytes32(ITangle.approveService.selector), bytes32(bytes4(0x6a46006b)), "approveService");
    }

    /// The overloads are told apart by their argument lists; prove the interface exposes both.
    function test_registerOperatorOverloadsAreTheInterfaces() public pure {
        bytes memory three = abi.encodeWithSignature("registerOperator(uint64,bytes,string)", uint64(0), "", "");
        bytes memory four = abi.encodeWithSignature("registerOperator(uint64,bytes,string,bytes)", uint64(0), "", "", "");
        bytes4 s3;
        bytes4 s4;
        assembly {
            s3 := mload(add(three, 32))
            s4 := mload(add(four, 32))
        }
        vm.assertEq(bytes32(s3), bytes32(bytes4(0xd4e1ab7c)), "3-arg");
        vm.assertEq(bytes32(s4), bytes32(bytes4(0x7324e916)), "4-arg");
    }

    function test_eventTopicsMatchSpec() public pure {
        vm.assertEq(
            ITangle.JobSubmitted.selector,
            0xde37cc48d21778e1c9a075c4e41c5aff6918c3ea6151221f0af3ce8121a29db5,
            "JobSubmitted"
        );
        vm.assertEq(
            ITangle.JobResultSubmitted.selector,
            0x8a04f99fe23284e874e8dd017345248279cc59701695e73bcdbeb6241bcd2ac6,
            "JobResultSubmitted"
        );
        vm.assertEq(
            ITangle.JobCompleted.selector,
            0x60a7649f6e93e7a3ce1dc9729c20e3d95dce28c6a6bd957cde09d8a1cb37c19f,
            "JobCompleted"
        );
        vm.assertEq(
            ITangle.ServiceActivated.selector,
            0x0325bb1c453505f13d5546dda087be5e237f7cf249f79a0ee406d97ef0ca7ee9,
            "ServiceActivated"
        );
        vm.assertEq(
            ITangle.ServiceRequested.selector,
            0x5c92301c22df4cc7209a8b0b25b2f5787750237e110e09a276a9f7d16e6709a4,
            "ServiceRequested"
        );
        vm.assertEq(
            ITangle.ServiceApproved.selector,
            0xceda1a44ead4da3d3abaaa941afa6d9530fd84dd8e99385c9183d986dcab980f,
            "ServiceApproved"
        );
        vm.assertEq(
            ITangle.ServiceTerminated.selector,
            0x3fd558a59bbce1d996d17eab7fde314bcd201ec3f17375a7f873b3162927e881,
            "ServiceTerminated"
        );
        vm.assertEq(
            ITangle.OperatorRegistered.selector,
            0x0455541bf5feb5fcc32e827dc18bf2175448427c6ae72c8d5e985c99e4104102,
            "OperatorRegistered"
        );
        vm.assertEq(
            ITangle.BlueprintCreated.selector,
            0x7ccd26bc6775ae4936200d467efc9a0e4e5f2fa8877e86faa1c7a1453a93a7fc,
            "BlueprintCreated"
        );
        vm.assertEq(
            ITangle.ManagerHookFailed.selector,
            keccak256("ManagerHookFailed(address,bytes4,bytes)"),
            "ManagerHookFailed"
        );
    }

    /// The hook selectors Tangle calls, by their canonical signatures.
    function test_hookSignatures() public pure {
        vm.assertEq(
            bytes32(IBlueprintServiceManager.onJobResult.selector),
            bytes32(bytes4(keccak256("onJobResult(uint64,uint8,uint64,address,bytes32,bytes)"))),
            "onJobResult"
        );
        vm.assertEq(
            bytes32(IBlueprintServiceManager.onJobCall.selector),
            bytes32(bytes4(keccak256("onJobCall(uint64,uint8,uint64,bytes)"))),
            "onJobCall"
        );
        vm.assertEq(
            bytes32(IBlueprintServiceManager.onRequest.selector),
            bytes32(bytes4(keccak256("onRequest(uint64,address,address[],bytes,uint64,address,uint256)"))),
            "onRequest"
        );
        vm.assertEq(
            bytes32(IBlueprintServiceManager.onServiceInitialized.selector),
            bytes32(bytes4(keccak256("onServiceInitialized(uint64,uint64,uint64,address,address[],uint64)"))),
            "onServiceInitialized"
        );
        vm.assertEq(
            bytes32(IBlueprintServiceManager.onBlueprintCreated.selector),
            bytes32(bytes4(keccak256("onBlueprintCreated(uint64,address,address)"))),
            "onBlueprintCreated"
        );
        vm.assertEq(
            bytes32(ITangle.getJobCall.selector),
            bytes32(bytes4(keccak256("getJobCall(uint64,uint64)"))),
            "getJobCall"
        );
    }
}
