// @agent-sandbox/sdk: public door of the package.
export {};
