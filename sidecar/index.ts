// @agent-sandbox/sidecar: public door of the package.
export {};
