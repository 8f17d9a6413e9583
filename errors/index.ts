// @agent-sandbox/errors: the one error base (code, short message, details, cause, walk) that each
// package's error class extends. No dependencies, so every layer — sidecar and client included — can use it.

export * from './src/base-error.ts';
