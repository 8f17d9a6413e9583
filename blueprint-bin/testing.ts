// @agent-sandbox/blueprint-bin/testing: test-only door — start the operator program as a process.
export {
  type DevnetOperatorEnv,
  devnetOperatorEnv,
  OPERATOR_BIN,
  OPERATOR_MAIN,
  type OperatorReadyOptions,
  operatorReady,
  type SpawnOperatorOptions,
  spawnOperator,
  stopOperator,
} from './src/testing/operator-process.ts';
