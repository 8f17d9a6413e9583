// TEE-instance mode, where chain meets runtime: the TEE backend from the operator's settings, a
// TeeService whose binding context names this chain, service and operator, the secrets it opens
// going to the sandbox's normal secret path, and the InstanceTee that reportProvisioned uses.
import { parseAllowList } from '@agent-sandbox/attestation';
import { openTeeBackend, TeeService, type TeeSettings, teeTrustAnchors } from '@agent-sandbox/runtime';
import type { Address } from 'viem';
import { type InstanceTee, teeContextFor } from './instance.ts';

export interface TeeInstanceOptions {
  settings: TeeSettings;
  chainId: bigint;
  serviceId: bigint;
  operator: Address;
  injectSecrets(sandboxId: string, env: Record<string, string>): Promise<unknown>;
  /** The operator's own check (a hint; clients bring their own allow-list). */
  expectedMeasurements: readonly string[];
  requirePinned: boolean;
  acceptedTcbStatuses: readonly string[];
}

export interface TeeInstance {
  service: TeeService;
  instance: InstanceTee;
  /** For the capabilities route: what this operator's TEE can do. */
  capabilities: { backend: string; type: string; bindsNonce: boolean; sealedSecrets: string };
}

/** Fails (saying why) when the host cannot produce evidence: the operator must not start. */
export async function openTeeInstance(o: TeeInstanceOptions): Promise<TeeInstance> {
  const backend = await openTeeBackend(o.settings);
  const anchors = await teeTrustAnchors(o.settings);
  const service = new TeeService({
    backend,
    contextFor: teeContextFor(o.chainId, o.serviceId, o.operator),
    injectSecrets: o.injectSecrets,
    verify: {
      anchors,
      allowList: parseAllowList(o.expectedMeasurements.join(',')),
      requirePinned: o.requirePinned,
      acceptedTcbStatuses: o.acceptedTcbStatuses,
    },
  });
  return {
    service,
    instance: {
      chainId: o.chainId,
      teeType: backend.teeType(),
      onChainDocument: (id, nonce) => service.onChainDocument(id, nonce),
    },
    capabilities: {
      backend: backend.name,
      type: backend.teeType(),
      bindsNonce: backend.supportsAttestationReportData(),
      sealedSecrets: 'hpke-x25519-sha256-chacha20poly1305',
    },
  };
}
