// Public surface of the operator API: build it from its dependencies, serve it, configure it.
export type { OperatorApi } from './app.ts';
export { createOperatorApi } from './app.ts';
export type { ApiConfig, ApiConfigInput } from './config.ts';
export { ApiConfigSchema, parseApiConfig, parseList } from './config.ts';
export type {
  ApiSandboxes,
  ApiSessions,
  ApiSidecarClient,
  ApiSidecars,
  ApiStore,
  ApiTee,
  ChainFeedHealth,
  EngineHealth,
  HealthCheck,
  InstanceHealth,
  OperatorApiDeps,
  OperatorMode,
} from './deps.ts';
export type { OperatorApiServer } from './serve.ts';
export { serveOperatorApi } from './serve.ts';
export { createApiSidecars } from './sidecars.ts';
