// Docker label names and resource names the runtime puts on everything it creates, so the engine
// can be reconciled with the store by one label-filtered list.

export const LABEL_MANAGED_BY = 'agent-sandbox.managed-by';
export const MANAGED_BY_VALUE = 'agent-sandbox-runtime';
export const LABEL_ID = 'agent-sandbox.id';
export const LABEL_OWNER = 'agent-sandbox.owner';
export const LABEL_SERVICE = 'agent-sandbox.service';
export const LABEL_OPERATOR = 'agent-sandbox.operator';
export const LABEL_KIND = 'agent-sandbox.kind';

export function containerName(sandboxId: string): string {
  return `agent-sandbox-${sandboxId}`;
}

export function volumeName(sandboxId: string): string {
  return `agent-sandbox-ws-${sandboxId}`;
}

/** Repository of committed snapshot images; the tag is the sandbox id. */
export const SNAPSHOT_REPO = 'agent-sandbox-snapshot';

export function sandboxLabels(
  p: { id: string; owner: string; serviceId: string; operatorId: string },
  kind: 'sandbox' | 'workspace' | 'snapshot',
  extra: Record<string, string>,
): Record<string, string> {
  return {
    ...extra,
    [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
    [LABEL_ID]: p.id,
    [LABEL_OWNER]: p.owner,
    [LABEL_SERVICE]: p.serviceId,
    [LABEL_OPERATOR]: p.operatorId,
    [LABEL_KIND]: kind,
  };
}
