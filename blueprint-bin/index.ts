// @agent-sandbox/blueprint-bin: public door of the package.
export {};
