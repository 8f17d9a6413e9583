// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ITangle} from "./tangle/ITangle.sol";
import {AgentSandboxJobCodec} from "./AgentSandboxJobCodec.sol";

/// @title AgentSandboxInstances
/// @notice Instance and TEE-instance modes: the request's config is the instance's spec, and each
///         service operator reports the endpoint it provisioned (with a TEE attestation's hash
///         where one is required), and reports it gone again.
abstract contract AgentSandboxInstances is AgentSandboxJobCodec {
    struct Provision {
        string sandboxId;
        string sidecarUrl;
        uint32 sshPort;
        bytes32 attestationHash;
        bool active;
    }

    /// requestId => keccak256(config). The config itself rides ServiceConfigRequested: storing
    /// ~1 KB (one SSTORE per word) would not fit the 500k gas Tangle gives the onRequest hook.
    mapping(uint64 => bytes32) private _requestConfigHash;
    /// serviceId => requestId + 1.
    mapping(uint64 => uint256) internal _serviceRequest;
    mapping(uint64 => mapping(address => Provision)) internal _provisions;
    mapping(uint64 => address[]) private _provisioned;
    mapping(address => uint32) public operatorProvisionCount;

    /// An instance request's config (an ABI-encoded SandboxCreateRequest, as given).
    event ServiceConfigRequested(uint64 indexed requestId, bytes config);
    event OperatorProvisioned(uint64 indexed serviceId, address indexed operator, string sandboxId, string sidecarUrl);
    event OperatorDeprovisioned(uint64 indexed serviceId, address indexed operator);
    event TeeAttestationStored(uint64 indexed serviceId, address indexed operator, bytes32 attestationHash);

    error InvalidServiceConfig();
    error NotInstanceMode();
    error NotServiceOperator(uint64 serviceId, address caller);
    error AlreadyProvisioned(uint64 serviceId, address operator);
    error NotProvisioned(uint64 serviceId, address operator);
    error AttestationRequired();
    error InvalidEndpoint();

    constructor(bool _instanceMode, bool _teeRequired) AgentSandboxJobCodec(_instanceMode, _teeRequired) {}

    /// Instance modes keep the request's config (an ABI-encoded SandboxCreateRequest, either form).
    function onRequest(uint64 requestId, address, address[] calldata, bytes calldata config, uint64, address, uint256)
        external
        payable
        override
        onlyFromTangle
    {
        if (!instanceMode) return;
        try this.checkJobInputs(JOB_SANDBOX_CREATE, config) {}
        catch (bytes memory reason) {
            // Keep a TEE refusal's own name; any other failure is an undecodable config.
            // takes the 4-byte error selector.
            // forge-lint: disable-next-line(unsafe-typecast)
            bytes4 sel = reason.length >= 4 ? bytes4(reason) : bytes4(0);
            if (sel == InvalidTeeType.selector || sel == TeeRequired.selector) _bubble(reason);
            revert InvalidServiceConfig();
        }
        _requestConfigHash[requestId] = keccak256(config);
        emit ServiceConfigRequested(requestId, config);
    }

    // ── instance modes ────────────────────────────────────────────────────────────────────────

    function reportProvisioned(
        uint64 serviceId,
        string calldata sandboxId,
        string calldata sidecarUrl,
        uint32 sshPort,
        string calldata teeAttestationJson
    ) external {
        if (!instanceMode) revert NotInstanceMode();
        if (!ITangle(tangleCore).isServiceOperator(serviceId, msg.sender)) {
            revert NotServiceOperator(serviceId, msg.sender);
        }
        Provision storage pv = _provisions[serviceId][msg.sender];
        if (pv.active) revert AlreadyProvisioned(serviceId, msg.sender);
        uint256 n = bytes(sandboxId).length;
        if (n == 0 || n > MAX_SANDBOX_ID_LENGTH) revert InvalidSandboxId();
        if (bytes(sidecarUrl).length == 0) revert InvalidEndpoint();
        bool attested = bytes(teeAttestationJson).length != 0;
        if (teeRequired && !attested) revert AttestationRequired();
        pv.sandboxId = sandboxId;
        pv.sidecarUrl = sidecarUrl;
        pv.sshPort = sshPort;
        pv.attestationHash = attested ? keccak256(bytes(teeAttestationJson)) : bytes32(0);
        pv.active = true;
        _provisioned[serviceId].push(msg.sender);
        operatorProvisionCount[msg.sender]++;
        emit OperatorProvisioned(serviceId, msg.sender, sandboxId, sidecarUrl);
        if (attested) emit TeeAttestationStored(serviceId, msg.sender, pv.attestationHash);
    }

    function reportDeprovisioned(uint64 serviceId) external {
        Provision storage pv = _provisions[serviceId][msg.sender];
        if (!pv.active) revert NotProvisioned(serviceId, msg.sender);
        delete _provisions[serviceId][msg.sender];
        address[] storage list = _provisioned[serviceId];
        for (uint256 i = 0; i < list.length; i++) {
            if (list[i] == msg.sender) {
                list[i] = list[list.length - 1];
                list.pop();
                break;
            }
        }
        operatorProvisionCount[msg.sender]--;
        emit OperatorDeprovisioned(serviceId, msg.sender);
    }

    function isOperatorProvisioned(uint64 serviceId, address operator) external view returns (bool) {
        return _provisions[serviceId][operator].active;
    }

    function getOperatorEndpoints(uint64 serviceId)
        external
        view
        returns (address[] memory operators, string[] memory sidecarUrls)
    {
        operators = _provisioned[serviceId];
        sidecarUrls = new string[](operators.length);
        for (uint256 i = 0; i < operators.length; i++) {
            sidecarUrls[i] = _provisions[serviceId][operators[i]].sidecarUrl;
        }
    }

    function getAttestationHash(uint64 serviceId, address operator) external view returns (bytes32) {
        return _provisions[serviceId][operator].attestationHash;
    }

    /// Where the instance's spec is: its request (whose ServiceConfigRequested carries the
    /// config) and the config's keccak256 (zero: not an instance service).
    function getServiceConfigRef(uint64 serviceId) external view returns (uint64 requestId, bytes32 configHash) {
        // A uint64 request id stored +1; 0 (no instance request) wraps to a request that never exists.
        unchecked {
            // forge-lint: disable-next-line(unsafe-typecast)
            requestId = uint64(_serviceRequest[serviceId] - 1);
        }
        configHash = _requestConfigHash[requestId];
    }
}
