// A CVM sandbox's record on this host: a valid SandboxRecord, running from the start, naming the
// CVM's sidecar and deployment, holding no token, container or volume of its own.
import { SandboxRecordSchema } from '@agent-sandbox/runtime';
import { describe, expect, it } from 'vitest';
import { cvmRecord } from './tee-sandboxes.ts';

describe('cvmRecord', () => {
  it('is a valid running record with the CVM sidecar and no local container', () => {
    const r = cvmRecord({
      id: `sbx-${'ab'.repeat(16)}`,
      owner: '0x0000000000000000000000000000000000000001',
      serviceId: '3',
      callId: '9',
      operatorId: 'op',
      name: 'cvm',
      image: 'agent-sandbox:tee',
      sidecarUrl: 'https://cvm.example:8443',
      deploymentId: 'dep-1',
      resources: { cpuCores: 1, memoryMb: 512, diskGb: 1 },
      timers: { idleTimeoutSeconds: 600, maxLifetimeSeconds: 3600 },
    });
    expect(SandboxRecordSchema.parse(r)).toEqual(r);
    expect(r).toMatchObject({
      state: 'running',
      token: '0'.repeat(64),
      sidecarUrl: 'https://cvm.example:8443',
      containerId: null,
      volumeName: '',
      metadata: { tee_backend: 'phala', deployment_id: 'dep-1' },
    });
    expect(r.startedAt).toBe(r.createdAt);
  });
});
