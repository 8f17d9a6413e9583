// @agent-sandbox/blueprint-lib: public door of the package.
export {};
