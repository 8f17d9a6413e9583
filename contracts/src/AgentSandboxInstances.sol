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

    mapping(uint64 => bytes) private _requestConfig;
    /// serviceId => requestId + 1: the config stays where onRequest put it, because copying
    /// ~1 KB of storage would not fit the 500k gas a best-effort hook gets.
    mapping(uint64 => uint256) internal _serviceRequest;
    mapping(uint64 => mapping(address => Provision)) internal _provisions;
    mapping(uint64 => address[]) private _provisioned;
    mapping(address => uint32) public operatorProvisionCount;

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
        _requestConfig[requestId] = config;
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

    /// The instance's spec: the request's config (an ABI-encoded SandboxCreateRequest, as given).
    function getServiceConfig(uint64 serviceId) external view returns (bytes memory) {
        uint256 r = _serviceRequest[serviceId];
        // r - 1 is a uint64 request id stored +1.
        // forge-lint: disable-next-line(unsafe-typecast)
        return r == 0 ? bytes("") : _requestConfig[uint64(r - 1)];
    }
}
