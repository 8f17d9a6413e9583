// The snapshot object store variables (SNAPSHOT_S3_*), kept beside config-vars.ts and spread into
// its table after the sandbox variables. Without SNAPSHOT_S3_BUCKET snapshots stay on local disk.

import { bool, list, text, v } from './config-var-parsers.ts';

export const SNAPSHOT_S3_VARIABLES = {
  SNAPSHOT_S3_BUCKET: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: '(none: snapshots stay on local disk)',
    doc: "Your S3-compatible bucket for the cold tier and POST /api/sandboxes/{id}/snapshot: archives are sealed with a key derived from SESSION_AUTH_SECRET (AES-256-GCM, never leaves the operator) before upload, under opaque names (SNAPSHOT_S3_PREFIX + a random id). Checked at start-up (the endpoint's allow-list, the bucket answering)",
  }),
  SNAPSHOT_S3_ENDPOINT: v({
    group: 'Sandboxes',
    schema: text,
    defaultDoc: "AWS S3's endpoint for SNAPSHOT_S3_REGION",
    doc: 'https://host[:port] of the S3-compatible service (MinIO, R2, B2, Ceph …). Refused at start-up: plain http (unless SNAPSHOT_S3_ALLOW_HTTP), a private, loopback or CGNAT address (unless its host is in SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS), link-local and cloud metadata addresses (always); every connection is checked again',
  }),
  SNAPSHOT_S3_REGION: v({
    group: 'Sandboxes',
    schema: text,
    def: 'us-east-1',
    doc: 'Region the requests are signed for',
  }),
  SNAPSHOT_S3_PREFIX: v({
    group: 'Sandboxes',
    schema: text,
    def: 'agent-sandbox/',
    doc: 'Prepended to every object name (letters, digits, / _ . -); share a bucket between operators with one prefix each',
  }),
  SNAPSHOT_S3_ACCESS_KEY_ID: v({
    group: 'Sandboxes',
    schema: text,
    secret: true,
    defaultDoc: "(none: the AWS SDK's default chain: AWS_* env, profile, instance role)",
    doc: 'Access key of the bucket (with SNAPSHOT_S3_SECRET_ACCESS_KEY; both or neither). Needs Get/Put/DeleteObject and multipart uploads on the prefix',
  }),
  SNAPSHOT_S3_SECRET_ACCESS_KEY: v({
    group: 'Sandboxes',
    schema: text,
    secret: true,
    defaultDoc: '(none)',
    doc: 'Secret of SNAPSHOT_S3_ACCESS_KEY_ID',
  }),
  SNAPSHOT_S3_FORCE_PATH_STYLE: v({
    group: 'Sandboxes',
    schema: bool,
    def: 'true',
    doc: 'Path-style requests (endpoint/bucket/key), what most S3-compatible services want; false: virtual-hosted (bucket.endpoint)',
  }),
  SNAPSHOT_S3_ALLOW_HTTP: v({
    group: 'Sandboxes',
    schema: bool,
    def: 'false',
    doc: 'Allow a plain-http SNAPSHOT_S3_ENDPOINT (objects are sealed either way, but signed requests and object metadata go in the clear): only for a store on a network you trust',
  }),
  SNAPSHOT_S3_ALLOW_PRIVATE_HOSTS: v({
    group: 'Sandboxes',
    schema: list,
    def: '',
    doc: 'Hosts (names or addresses, comma-separated) of SNAPSHOT_S3_ENDPOINT that may be private, loopback or CGNAT addresses (a store on your own network); link-local and metadata addresses are refused even when listed',
  }),
} as const;
