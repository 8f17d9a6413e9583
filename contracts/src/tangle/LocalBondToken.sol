// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title LocalBondToken
/// @notice The devnet's operator bond token, standing in for tnt-core's LocalTestnet TNT (an
///         OpenZeppelin 5.1 ERC20): the ERC20 calls, events and OpenZeppelin 5's ERC-6093 errors
///         the staking path meets (transferFrom spends the allowance first, then moves the
///         balance). Written here because the build has no Solidity libraries (foundry.toml
///         `libs = []`, offline). Its deployer mints; nothing else is privileged.
contract LocalBondToken {
    string public constant name = "Local TNT";
    string public constant symbol = "TNT";
    uint8 public constant decimals = 18;
    address private immutable _minter;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error ERC20InvalidReceiver(address receiver);
    error ERC20InvalidSpender(address spender);
    error OwnableUnauthorizedAccount(address account);

    constructor() {
        _minter = msg.sender;
    }

    function mint(address to, uint256 value) external {
        if (msg.sender != _minter) revert OwnableUnauthorizedAccount(msg.sender);
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function approve(address spender, uint256 value) external returns (bool) {
        if (spender == address(0)) revert ERC20InvalidSpender(address(0));
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < value) revert ERC20InsufficientAllowance(msg.sender, allowed, value);
            allowance[from][msg.sender] = allowed - value;
        }
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) private {
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        uint256 have = balanceOf[from];
        if (have < value) revert ERC20InsufficientBalance(from, have, value);
        balanceOf[from] = have - value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
