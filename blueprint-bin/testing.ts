// @agent-sandbox/blueprint-bin/testing: test-and-dev-tooling door (tests, benches, the demo) — start
// the operator program as a process. Product code never imports it.
export {
  bundleNodeFlags,
  type DevnetOperatorEnv,
  devnetOperatorEnv,
  OPERATOR_BIN,
  OPERATOR_BUNDLE,
  OPERATOR_MAIN,
  type OperatorReadyLine,
  type OperatorReadyOptions,
  operatorReady,
  operatorReadyLine,
  type SpawnOperatorOptions,
  spawnOperator,
  stopOperator,
} from './src/testing/operator-process.ts';
