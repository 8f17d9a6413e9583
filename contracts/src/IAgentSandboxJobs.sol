// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {AgentSandboxBlueprint} from "./AgentSandboxBlueprint.sol";

/// @title The blueprint's jobs as ABI: one function per job index, its input as parameters and its
/// output as return values (spec/contract.md, "Jobs"). Never deployed and never called: Tangle passes
/// job inputs and results as opaque bytes, so this interface exists only so that forge's generated
/// ABI carries every job layout, and the operator, the client and the devnet read them from there
/// (contracts/jobs.ts) instead of spelling them by hand.
interface IAgentSandboxJobs {
    /// Job 0. Output: `abi.encode((string sandboxId, string json))`, one tuple.
    function sandboxCreate(AgentSandboxBlueprint.SandboxCreateRequest calldata request)
        external
        returns (string memory sandboxId, string memory json);

    /// Job 1.
    function sandboxDelete(string calldata sandbox_id) external returns (string memory json);

    /// Job 2.
    function workflowCreate(AgentSandboxBlueprint.WorkflowCreateRequest calldata request)
        external
        returns (string memory json);

    /// Job 3.
    function workflowTrigger(uint64 workflow_id) external returns (string memory json);

    /// Job 4.
    function workflowCancel(uint64 workflow_id) external returns (string memory json);
}
