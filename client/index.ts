// @agent-sandbox/client: public door of the package.
export {};
