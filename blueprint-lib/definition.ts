// @agent-sandbox/blueprint-lib/definition: the chain-only door (definition, deployment, approval policy).
export * from './src/definition/index.ts';
