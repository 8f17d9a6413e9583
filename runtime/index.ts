// @agent-sandbox/runtime: public door of the package.
export {};
