// Renders a devnet's description as the readable summary the CLI prints.
import { relative } from 'node:path';
import { DEVNET_KINDS, type DevnetInfo } from './state.ts';

const LABEL: Record<(typeof DEVNET_KINDS)[number], string> = {
  cloud: 'cloud (AgentSandboxBlueprint false,false)',
  instance: 'instance (AgentSandboxBlueprint true,false)',
  teeInstance: 'TEE instance (AgentSandboxBlueprint true,true)',
  toy: 'toy (BlueprintServiceManagerBase)',
};

export function formatSummary(info: DevnetInfo, stateFile: string): string {
  const rel = relative(process.cwd(), stateFile) || stateFile;
  const lines = [
    `chain id   ${info.chainId}`,
    `RPC        ${info.rpcUrl}`,
    `WebSocket  ${info.wsUrl}`,
    `started    ${info.startedAt}`,
    '',
    info.protocol
      ? `Tangle       ${info.contracts.tangle} (tnt-core${info.protocol.commit ? ` ${info.protocol.commit.slice(0, 7)}` : ''}, from ${info.protocol.stateFile})`
      : `LocalTangle  ${info.contracts.tangle}`,
    '',
    'blueprint / service / manager:',
    ...DEVNET_KINDS.map(
      (k) =>
        `  ${LABEL[k].padEnd(48)} blueprint ${String(info.blueprints[k]).padEnd(3)} service ${String(info.services[k]).padEnd(3)} ${info.contracts[k]}`,
    ),
    '',
    "accounts (anvil's public dev keys: for this local chain only, never for real funds):",
    ...Object.entries(info.accounts).map(([name, a]) => `  ${name.padEnd(13)} ${a.address}  ${a.role}`),
    '',
    `everything above, with the private keys: ${rel.startsWith('..') ? stateFile : rel}`,
  ];
  return lines.join('\n');
}
