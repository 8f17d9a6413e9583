// Test fixture: an in-memory ApiSandboxes whose sidecar endpoint is a real local HTTP server. It is
// a fixture for the API layer (no Docker), not a stand-in for the SandboxManager.
import { RuntimeError } from '../../errors.ts';
import { memberAddress } from '../../sandbox/members.ts';
import { newSandboxId, newSidecarToken, type SandboxRecord } from '../../sandbox/record.ts';
import { parseSshKey } from '../../sandbox/ssh-keys.ts';
import type { ApiSandboxes } from '../deps.ts';

export function makeRecord(owner: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  const now = Date.now();
  return {
    id: newSandboxId(),
    owner,
    serviceId: '1',
    callId: '7',
    operatorId: '0x0000000000000000000000000000000000000001',
    name: 'test',
    state: 'running',
    token: newSidecarToken(),
    image: 'agent-sandbox:test',
    containerId: 'c1',
    volumeName: 'v1',
    hostPort: null,
    sidecarUrl: null,
    tier: null,
    snapshotImageId: null,
    snapshotArchiveDir: null,
    resources: { cpuCores: 1, memoryMb: 512, diskGb: 1, diskEnforced: false },
    timers: { idleTimeoutSeconds: 600, maxLifetimeSeconds: 3600 },
    baseEnv: { BASE: 'visible-config' },
    userEnv: {},
    metadata: {},
    createdAt: now,
    updatedAt: now,
    startedAt: now,
    lastActivityAt: now,
    stoppedAt: null,
    tierSince: null,
    stopReason: null,
    error: null,
    ...over,
  };
}

export class MemorySandboxes implements ApiSandboxes {
  readonly records = new Map<string, SandboxRecord>();
  readonly touches: string[] = [];
  readonly exposed = new Map<string, Map<number, number>>();
  readonly provisions = new Map<string, Record<string, unknown>>();
  /** Sidecar base URL per sandbox (the fake sidecar). */
  readonly endpoints = new Map<string, string>();

  add(record: SandboxRecord, sidecarUrl: string): SandboxRecord {
    this.records.set(record.id, record);
    this.endpoints.set(record.id, sidecarUrl);
    return record;
  }

  // Records are handed out as they are (like the SandboxManager does); the API never mutates them.
  get(id: string) {
    return this.records.get(id);
  }
  list(filter: { owner: string } | { member: string }) {
    const all = [...this.records.values()];
    if ('member' in filter) return all.filter((r) => (r.members ?? []).includes(filter.member.toLowerCase()));
    const o = filter.owner.toLowerCase();
    return all.filter((r) => r.owner.toLowerCase() === o);
  }
  // Team access, with the manager's rules (sandbox/members.ts) on a plain map.
  addMember(id: string, address: string) {
    const a = memberAddress(address);
    const r = this.records.get(id);
    if (r && r.owner.toLowerCase() === a) throw new RuntimeError('VALIDATION', 'the owner is not a member');
    return this.mutate(id, (x) => {
      x.members = [...new Set([...(x.members ?? []), a])];
    });
  }
  removeMember(id: string, address: string) {
    const a = memberAddress(address);
    if (!(this.records.get(id)?.members ?? []).includes(a))
      throw new RuntimeError('NOT_FOUND', 'not a member');
    return this.mutate(id, (x) => {
      x.members = (x.members ?? []).filter((m) => m !== a);
    });
  }
  addSshKey(id: string, text: string) {
    const key = parseSshKey(text, Date.now());
    const record = this.mutate(id, (x) => {
      x.sshKeys = [...(x.sshKeys ?? []).filter((k) => k.fingerprint !== key.fingerprint), key];
    });
    return { key, record };
  }
  removeSshKey(id: string, which: string) {
    const fp = which.startsWith('SHA256:') ? which : parseSshKey(which, 0).fingerprint;
    if (!(this.records.get(id)?.sshKeys ?? []).some((k) => k.fingerprint === fp))
      throw new RuntimeError('NOT_FOUND', 'no such key');
    return this.mutate(id, (x) => {
      x.sshKeys = (x.sshKeys ?? []).filter((k) => k.fingerprint !== fp);
    });
  }
  private mutate(id: string, fn: (r: SandboxRecord) => void): SandboxRecord {
    const r = this.records.get(id);
    if (!r) throw new RuntimeError('SANDBOX_NOT_FOUND', 'no such sandbox');
    // Replaced, not edited in place: a record a request already holds stays as it was.
    const next = structuredClone(r);
    fn(next);
    next.updatedAt = Date.now();
    this.records.set(id, next);
    return next;
  }
  stop(id: string) {
    return this.mutate(id, (r) => {
      r.state = 'stopped';
      r.stoppedAt = Date.now();
      r.stopReason = 'user';
    });
  }
  resume(id: string) {
    return this.mutate(id, (r) => {
      r.state = 'running';
      r.stoppedAt = null;
    });
  }
  snapshot(id: string) {
    this.mutate(id, () => {});
    return { imageId: 'sha256:abc', snapshotArchiveDir: '/var/secret/path', token: 'must-not-leak' };
  }
  injectSecrets(id: string, env: Record<string, string>) {
    return this.mutate(id, (r) => {
      r.userEnv = { ...env };
    });
  }
  wipeSecrets(id: string) {
    return this.mutate(id, (r) => {
      r.userEnv = {};
    });
  }
  touch(id: string) {
    if (this.touches.length < 100_000) this.touches.push(id);
  }
  getProvision(callId: string) {
    return this.provisions.get(callId);
  }
  exposedPort(id: string, port: number) {
    return this.exposed.get(id)?.get(port) ?? null;
  }
  sidecarEndpoint(id: string) {
    const r = this.records.get(id);
    const url = this.endpoints.get(id);
    if (!r || !url) throw new RuntimeError('SANDBOX_NOT_FOUND', 'no such sandbox');
    return { url, token: r.token };
  }
}
