// @agent-sandbox/blueprint-lib/definition: the blueprint's on-chain definition, its deployment and
// the operator's approval policy; chain-only (no runtime), so dev tooling may load it.
export * from './agent-sandbox.ts';
export * from './approval-policy.ts';
export * from './deploy.ts';
